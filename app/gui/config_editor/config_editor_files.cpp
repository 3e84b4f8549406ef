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
#include <QTableView>

#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/common/text_file_format.hpp"

namespace shardscope::gui {
namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "configEditor/recentFiles";
// DeepSpeed reads a config path of any name with hjson: .jsonc and .hjson files are configs too.
const QString kConfigFilter = QObject::tr("DeepSpeed config (*.json *.jsonc *.hjson);;All files (*)");

}  // namespace

void ConfigEditorPage::buildActions() {
  // The keys are spelt out (keyboard_shortcuts.hpp): QKeySequence::SaveAs is empty outside GNOME and KDE.
  auto make = [this](const QString& text, const QString& name, const QString& tip) {
    auto* action = new QAction(text, this);
    const QList<QKeySequence> keys = shortcut_keys(name);
    action->setShortcuts(keys);
    // Undo and redo act while the page has focus (other pages' text fields have their own); the
    // file actions, which File menu holds too, act wherever the focus is, as File > Save does in
    // any editor (with the page list focused after Ctrl+3, Ctrl+S did nothing).
    const bool file_action = name == tr("Open") || name == tr("Save") || name == tr("Save As");
    action->setShortcutContext(file_action ? Qt::WindowShortcut : Qt::WidgetWithChildrenShortcut);
    action->setToolTip(QString("%1 (%2)").arg(tip, keys.value(0).toString(QKeySequence::NativeText)));
    addAction(action);
    return action;
  };
  open_ = make(tr("Open\u2026"), tr("Open"), tr("Open a DeepSpeed config"));
  save_ = make(tr("Save"), tr("Save"), tr("Save the config"));
  save_as_ = make(tr("Save As\u2026"), tr("Save As"), tr("Save the config under a new name"));
  undo_ = make(tr("Undo"), tr("Undo"), tr("Undo the last edit, in the text or the form"));
  redo_ = make(tr("Redo"), tr("Redo"), tr("Redo"));  // Ctrl+Y and Ctrl+Shift+Z
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
  disk_format_ = {};
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
  QString text, error;
  TextFileFormat format;
  if (!decode_text_file(file.readAll(), &text, &format, &error)) {
    emit statusMessage(tr("Cannot open %1: %2").arg(path, error));
    return false;
  }
  disk_text_ = text;
  disk_format_ = format;
  file_path_ = QFileInfo(path).absoluteFilePath();
  editor_->setPlainText(disk_text_);  // also resets the undo stack: undo never crosses files
  editor_->document()->setModified(false);
  rememberRecent(file_path_);
  updateTitle();
  validateNow();
  diagnostics_view_->scrollToTop();  // the last file's scroll position means nothing here
  emit statusMessage(format.mixed ? tr("Opened %1 (mixed line endings: a save writes CRLF, the first line's, throughout)").arg(file_path_)
                                  : tr("Opened %1").arg(file_path_));
  return true;
}

bool ConfigEditorPage::saveTo(const QString& path) {
  QSaveFile file(path);  // temporary name, renamed on commit: a crash never leaves half a config
  // The line endings and byte order mark the file was opened with (a template: LF, none).
  const QByteArray bytes = encode_text_file(editor_->toPlainText(), disk_format_);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
    emit statusMessage(tr("Cannot save %1: %2").arg(path, file.errorString()));
    return false;
  }
  file_path_ = QFileInfo(path).absoluteFilePath();
  disk_text_ = editor_->toPlainText();
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
                                                    kConfigFilter);
  return !path.isEmpty() && saveTo(path);
}

void ConfigEditorPage::openWithDialog() {
  if (!maybeSave()) return;
  const QString path = QFileDialog::getOpenFileName(this, tr("Open DeepSpeed config"), QFileInfo(file_path_).path(),
                                                    kConfigFilter);
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
