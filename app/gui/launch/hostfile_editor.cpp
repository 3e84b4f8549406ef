#include "app/gui/launch/hostfile_editor.hpp"

#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QTextBlock>
#include <QVBoxLayout>

#include "configs/hostfile.hpp"

namespace shardscope::gui {
namespace {

constexpr qint64 kMaxHostfileBytes = 4 << 20;  // configs' own limit: anything bigger is no hostfile

/// The line number in "path:N: ..." (the parser's prefix), or 0.
int line_named(const QString& message, const QString& path) {
  const QRegularExpression prefix("^" + QRegularExpression::escape(path) + ":(\\d+): ");
  const auto m = prefix.match(message);
  return m.hasMatch() ? m.captured(1).toInt() : 0;
}

}  // namespace

HostfileCheck check_hostfile_text(const QString& text, const QString& path) {
  HostfileCheck check;
  const QString name = path.isEmpty() ? QStringLiteral("hostfile") : path;
  try {
    const configs::Hostfile hostfile = configs::parse_hostfile(text.toStdString(), name.toStdString());
    check.ok = true;
    check.hosts = static_cast<int>(hostfile.hosts.size());
    for (const auto& entry : hostfile.hosts) check.total_slots += entry.slot_count;
    check.message = QObject::tr("%n host(s)", nullptr, check.hosts) + QObject::tr(", %n slot(s)", nullptr, check.total_slots);
  } catch (const configs::HostfileError& e) {
    check.message = QString::fromStdString(e.what());
    check.error_line = line_named(check.message, name);
  }
  return check;
}

bool save_text_atomically(const QString& path, const QString& text, QString* error) {
  QSaveFile file(path);
  const QByteArray bytes = text.toUtf8();
  if (file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size() && file.commit()) return true;
  *error = QObject::tr("could not write %1: %2").arg(path, file.errorString());
  return false;
}

HostfileEditor::HostfileEditor(QWidget* parent) : QWidget(parent) {
  path_ = new QLineEdit;
  path_->setPlaceholderText(tr("hostfile path (--hostfile)"));
  path_->setToolTip(tr("The MPI-style hostfile the launcher reads (--hostfile); Enter opens it"));
  auto* open = new QPushButton(tr("Open\u2026"));
  save_ = new QPushButton(tr("Save"));
  auto* save_as = new QPushButton(tr("Save As\u2026"));
  save_->setToolTip(tr("Write the text to the path above (atomically: a temporary file renamed over it)"));
  editor_ = new QPlainTextEdit;
  editor_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  editor_->setLineWrapMode(QPlainTextEdit::NoWrap);  // one host per line, as the error's line number counts
  editor_->setPlaceholderText("# one host per line\nworker-0 slots=8\nworker-1 slots=8");
  editor_->setFixedHeight(editor_->fontMetrics().lineSpacing() * 5 + 12);
  editor_->setToolTip(tr("`HOST slots=N` per line, `#` comments: checked as DeepSpeed's runner reads it"));
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(open);
  buttons->addWidget(save_);
  buttons->addWidget(save_as);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(path_);
  layout->addLayout(buttons);
  layout->addWidget(editor_);
  layout->addWidget(status_);
  connect(open, &QPushButton::clicked, this, &HostfileEditor::chooseAndOpen);
  connect(save_, &QPushButton::clicked, this, [this] { path().isEmpty() ? chooseAndSave() : void(saveTo(path())); });
  connect(save_as, &QPushButton::clicked, this, &HostfileEditor::chooseAndSave);
  connect(path_, &QLineEdit::returnPressed, this, [this] { openFile(path()); });
  connect(path_, &QLineEdit::textChanged, this, [this] {
    recheck();
    emit changed();
  });
  connect(editor_, &QPlainTextEdit::textChanged, this, [this] {
    recheck();
    emit changed();
  });
  recheck();
}

QString HostfileEditor::path() const { return path_->text().trimmed(); }

void HostfileEditor::setPath(const QString& path) { path_->setText(path); }

bool HostfileEditor::isModified() const { return editor_->document()->isModified(); }

bool HostfileEditor::openFile(const QString& path) {
  QFile file(path);
  if (file.size() > kMaxHostfileBytes) {
    showStatus(tr("%1 is %2 bytes, which is no hostfile").arg(path).arg(file.size()), true);
    return false;
  }
  if (!file.open(QIODevice::ReadOnly)) {
    showStatus(tr("cannot open %1: %2").arg(path, file.errorString()), true);
    return false;
  }
  const QString text = QString::fromUtf8(file.readAll());
  path_->setText(path);
  editor_->setPlainText(text);
  editor_->document()->setModified(false);
  recheck();  // setPlainText checked it while it still counted as modified
  return true;
}

bool HostfileEditor::saveTo(const QString& path) {
  QString error;
  if (!save_text_atomically(path, editor_->toPlainText(), &error)) {
    showStatus(error, true);
    return false;
  }
  path_->setText(path);
  editor_->document()->setModified(false);
  recheck();
  return true;
}

void HostfileEditor::recheck() {
  check_ = check_hostfile_text(editor_->toPlainText(), path());
  QList<QTextEdit::ExtraSelection> marks;
  if (check_.error_line > 0) {
    QTextEdit::ExtraSelection mark;
    mark.format.setBackground(QColor(253, 226, 225));
    mark.format.setProperty(QTextFormat::FullWidthSelection, true);
    mark.cursor = QTextCursor(editor_->document()->findBlockByNumber(check_.error_line - 1));
    marks << mark;
  }
  editor_->setExtraSelections(marks);
  if (editor_->toPlainText().trimmed().isEmpty()) {  // nothing written yet: a hint, not DeepSpeed's error
    showStatus(tr("Write one `HOST slots=N` line per host, or Open a hostfile."), false);
    status_->setStyleSheet({});
    return;
  }
  const bool unsaved = check_.ok && isModified();
  showStatus(unsaved ? check_.message + tr(" (unsaved: Save before Start or Preflight)") : check_.message, !check_.ok);
}

void HostfileEditor::showStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? "QLabel { color: #b00020; }" : "QLabel { color: #2e7d32; }");
}

void HostfileEditor::chooseAndOpen() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a hostfile"), this->path(), tr("All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void HostfileEditor::chooseAndSave() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save the hostfile"), this->path(), tr("All files (*)"));
  if (!path.isEmpty()) saveTo(path);
}

}  // namespace shardscope::gui
