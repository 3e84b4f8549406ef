#include "app/gui/common/keyboard_shortcuts.hpp"

#include <QDialog>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace shardscope::gui {

const std::vector<KeyboardShortcut>& keyboard_shortcuts() {
  static const std::vector<KeyboardShortcut> table = [] {
    std::vector<KeyboardShortcut> t;
    const QString window = QObject::tr("window");
    for (int i = 0; i < 6; ++i)
      t.push_back({QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)), QObject::tr("Page %1").arg(i + 1), window});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_I), QObject::tr("Import DeepSpeed run"), window});
    t.push_back({QKeySequence(Qt::Key_F5), QObject::tr("Refresh environment report"), window});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_Q), QObject::tr("Quit"), window});
    const QString editor = QObject::tr("Config Editor");
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_O), QObject::tr("Open"), editor});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_S), QObject::tr("Save"), editor});
    t.push_back({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), QObject::tr("Save As"), editor});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_Z), QObject::tr("Undo"), editor});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_Y), QObject::tr("Redo"), editor});
    t.push_back({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QObject::tr("Redo"), editor});
    const QString launch = QObject::tr("Launch & Watch");
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_R), QObject::tr("Start"), launch});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_Period), QObject::tr("Stop"), launch});
    const QString sessions = QObject::tr("Sessions & Compare");
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_Return), QObject::tr("Compare"), sessions});
    t.push_back({QKeySequence(Qt::CTRL | Qt::Key_P), QObject::tr("Profile"), sessions});
    t.push_back({QKeySequence(Qt::Key_Escape), QObject::tr("Clear selection"), QObject::tr("Profile view")});
    return t;
  }();
  return table;
}

QList<QKeySequence> shortcut_keys(const QString& action) {
  QList<QKeySequence> keys;
  for (const auto& s : keyboard_shortcuts())
    if (s.action == action) keys << s.keys;
  return keys;
}

QDialog* make_shortcuts_dialog(QWidget* parent) {
  auto* dialog = new QDialog(parent);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(QObject::tr("Keyboard shortcuts"));
  const auto& table = keyboard_shortcuts();
  auto* view = new QTableWidget(static_cast<int>(table.size()), 3, dialog);
  view->setHorizontalHeaderLabels({QObject::tr("Keys"), QObject::tr("Action"), QObject::tr("Where")});
  view->verticalHeader()->hide();
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  for (int r = 0; r < view->rowCount(); ++r) {
    const auto& s = table[static_cast<std::size_t>(r)];
    view->setItem(r, 0, new QTableWidgetItem(s.keys.toString(QKeySequence::NativeText)));
    view->setItem(r, 1, new QTableWidgetItem(s.action));
    view->setItem(r, 2, new QTableWidgetItem(s.where));
  }
  view->resizeColumnsToContents();
  view->horizontalHeader()->setStretchLastSection(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  auto* layout = new QVBoxLayout(dialog);
  layout->addWidget(view);
  layout->addWidget(buttons);
  dialog->resize(460, 520);
  return dialog;
}

}  // namespace shardscope::gui
