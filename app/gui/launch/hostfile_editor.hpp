#pragma once
// The hostfile of "these hosts" on the Launch & Watch page: a path, the file's text in a small
// editor (`HOST slots=N` lines, `#` comments), checked live by configs' own hostfile parser, which
// the launcher uses too, so an error names the line as DeepSpeed's runner does; Open, Save and
// Save As (QSaveFile: a temporary file renamed over the target, never a half-written hostfile).

#include <QString>
#include <QWidget>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace shardscope::gui {

/// What configs::parse_hostfile says of a hostfile's text.
struct HostfileCheck {
  bool ok = false;
  QString message;     ///< "2 hosts, 3 slots" or the parser's error (file:line: DeepSpeed's words)
  int hosts = 0;
  int total_slots = 0;
  int error_line = 0;  ///< 1-based line the error names; 0 when it names none
};

/// Parses `text` as the hostfile `path` (named in the message).
HostfileCheck check_hostfile_text(const QString& text, const QString& path);

/// Writes `text` to `path` atomically; false with `*error` set when it cannot.
bool save_text_atomically(const QString& path, const QString& text, QString* error);

class HostfileEditor : public QWidget {
  Q_OBJECT

 public:
  explicit HostfileEditor(QWidget* parent = nullptr);

  QString path() const;
  /// Names the file without reading it (a saved setting; Open reads it).
  void setPath(const QString& path);
  /// Reads `path` into the editor; false with the reason in the status line.
  bool openFile(const QString& path);
  /// Writes the editor's text to `path` and makes it the current file.
  bool saveTo(const QString& path);
  bool isModified() const;
  HostfileCheck check() const { return check_; }

  QLineEdit* pathField() const { return path_; }
  QPlainTextEdit* editor() const { return editor_; }
  QLabel* status() const { return status_; }

 signals:
  /// The path or the text changed (the page's CLI twin follows).
  void changed();

 private:
  void recheck();
  void showStatus(const QString& text, bool error);
  void chooseAndOpen();
  void chooseAndSave();

  QLineEdit* path_ = nullptr;
  QPlainTextEdit* editor_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* save_ = nullptr;
  HostfileCheck check_;
};

}  // namespace shardscope::gui
