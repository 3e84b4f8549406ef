// ConfigEditorPage: files. Open, save (atomically, through QSaveFile), recent files in QSettings,
// templates compiled in from configs/templates, and the unsaved-changes prompt.
#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QSettings>

#include "app/gui/code_editor.hpp"
#include "app/gui/config_editor_page.hpp"

namespace shardscope::gui {
namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "configEditor/recentFiles";

}  // namespace

void ConfigEditorPage::buildActions() {
  auto make = [this](const QString& text, const QKeySequence& keys, const QString& tip) {
    auto* action = new QAction(text, this);
    action->setShortcut(keys);
    // Active while the page has focus, so Ctrl+S here does not fire on other pages.
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    action->setToolTip(QString("%1 (%2)").arg(tip, keys.toString(QKeySequence::NativeText)));
    addAction(action);
    return action;
  };
  open_ = make(tr("Open\u2026"), QKeySequence::Open, tr("Open a DeepSpeed config"));
  save_ = make(tr("Save"), QKeySequence::Save, tr("Save the config"));
  save_as_ = make(tr("Save As\u2026"), QKeySequence::SaveAs, tr("Save the config under a new name"));
  undo_ = make(tr("Undo"), QKeySequence::Undo, tr("Undo the last edit, in the text or the form"));
  redo_ = make(tr("Redo"), QKeySequence::Redo, tr("Redo"));
  // Ctrl+Y as well as the platform's Redo (Ctrl+Shift+Z on most Linux desktops).
  QList<QKeySequence> redo_keys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redo_keys.contains(QKeySequence(Qt::CTRL | Qt::Key_Y))) redo_keys << QKeySequence(Qt::CTRL | Qt::Key_Y);
  redo_->setShortcuts(redo_keys);
  connect(open_, &QAction::triggered, this, &ConfigEditorPage::openWithDialog);
  connect(save_, &QAction::triggered, this, &ConfigEditorPage::save);
  connect(save_as_, &QAction::triggered, this, &ConfigEditorPage::saveAs);
  connect(undo_, &QAction::triggered, editor_, &QPlainTextEdit::undo);
  connect(redo_, &QAction::triggered, editor_, &QPlainTextEdit::redo);
  connect(editor_, &QPlainTextEdit::undoAvailable, undo_, &QAction::setEnabled);
  connect(editor_, &QPlainTextEdit::redoAvailable, redo_, &QAction::setEnabled);
  undo_->setEnabled(false);
  redo_->setEnabled(false);
  template_menu_ = new QMenu(tr("New from template"), this);
  for (const QString& name : templateNames())
    template_menu_->addAction(name, this, [this, name] {
      if (maybeSave()) newFromTemplate(name);
    });
  recent_menu_ = new QMenu(tr("Recent files"), this);
  rebuildRecentMenu();
}

QList<QAction*> ConfigEditorPage::fileActions() const { return {open_, save_, save_as_}; }

QStringList ConfigEditorPage::templateNames() {
  QStringList names;
  for (const QFileInfo& info : QDir(":/templates").entryInfoList({"*.json"}, QDir::Files, QDir::Name))
    names << info.completeBaseName();
  return names;
}

bool ConfigEditorPage::newFromTemplate(const QString& name) {
  QFile file(":/templates/" + name + ".json");
  if (!file.open(QIODevice::ReadOnly)) {
    emit statusMessage(tr("No template named %1 (known: %2)").arg(name, templateNames().join(", ")));
    return false;
  }
  file_path_.clear();
  disk_text_.clear();
  editor_->setPlainText(QString::fromUtf8(file.readAll()));
  editor_->document()->setModified(true);  // a template is not saved anywhere yet
  updateTitle();
  validateNow();
  emit statusMessage(tr("New config from template %1").arg(name));
  return true;
}

bool ConfigEditorPage::openFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    emit statusMessage(tr("Cannot open %1: %2").arg(path, file.errorString()));
    return false;
  }
  disk_text_ = QString::fromUtf8(file.readAll());
  file_path_ = QFileInfo(path).absoluteFilePath();
  editor_->setPlainText(disk_text_);  // also resets the undo stack: undo never crosses files
  editor_->document()->setModified(false);
  rememberRecent(file_path_);
  updateTitle();
  validateNow();
  emit statusMessage(tr("Opened %1").arg(file_path_));
  return true;
}

bool ConfigEditorPage::saveTo(const QString& path) {
  QSaveFile file(path);  // temporary name, renamed on commit: a crash never leaves half a config
  const QByteArray bytes = editor_->toPlainText().toUtf8();
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
    emit statusMessage(tr("Cannot save %1: %2").arg(path, file.errorString()));
    return false;
  }
  file_path_ = QFileInfo(path).absoluteFilePath();
  disk_text_ = QString::fromUtf8(bytes);
  editor_->document()->setModified(false);
  rememberRecent(file_path_);
  updateTitle();
  updateDiff();
  emit statusMessage(tr("Saved %1").arg(file_path_));
  return true;
}

bool ConfigEditorPage::save() { return file_path_.isEmpty() ? saveAs() : saveTo(file_path_); }

bool ConfigEditorPage::saveAs() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save DeepSpeed config"),
                                                    file_path_.isEmpty() ? "ds_config.json" : file_path_,
                                                    tr("DeepSpeed config (*.json)"));
  return !path.isEmpty() && saveTo(path);
}

void ConfigEditorPage::openWithDialog() {
  if (!maybeSave()) return;
  const QString path = QFileDialog::getOpenFileName(this, tr("Open DeepSpeed config"), QFileInfo(file_path_).path(),
                                                    tr("DeepSpeed config (*.json *.hjson);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

bool ConfigEditorPage::maybeSave() {
  if (!editor_->document()->isModified()) return true;
  const auto answer = QMessageBox::warning(
      this, tr("Unsaved changes"),
      tr("%1 has unsaved changes. Save them?").arg(file_path_.isEmpty() ? tr("The config") : file_path_),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

void ConfigEditorPage::updateTitle() {
  const QString name = file_path_.isEmpty() ? tr("untitled (not saved)") : file_path_;
  file_label_->setText((editor_->document()->isModified() ? "\u25CF " : "") + name);
}

void ConfigEditorPage::rememberRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(kRecentKey).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(kRecentKey, recent);
  rebuildRecentMenu();
}

void ConfigEditorPage::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value(kRecentKey).toStringList();
  for (const QString& path : recent)
    recent_menu_->addAction(path, this, [this, path] {
      if (maybeSave()) openFile(path);
    });
  if (recent.isEmpty()) recent_menu_->addAction(tr("(none yet)"))->setEnabled(false);
}

}  // namespace shardscope::gui
