#pragma once
// A QPlainTextEdit with a line-number gutter (Qt's CodeEditor example) and diagnostics drawn as
// wavy underlines, so a validator's line numbers can be found at a glance.

#include <QPlainTextEdit>
#include <vector>

namespace shardscope::gui {

class CodeEditor : public QPlainTextEdit {
  Q_OBJECT

 public:
  /// A line to underline: 1-based line, and whether it is an error (red) or a warning (orange).
  struct Mark {
    int line = 0;
    bool error = true;
    QString message;
  };

  explicit CodeEditor(QWidget* parent = nullptr);

  /// Selects the whole 1-based `line`, scrolls to it and focuses the editor.
  void selectLine(int line);
  /// Replaces the underlined lines.
  void setMarks(std::vector<Mark> marks);
  /// Replaces the whole text as one undoable edit, touching only the span that changed so the
  /// cursor and scroll position stay where they were.
  void replaceTextUndoable(const QString& text);

  int lineNumberAreaWidth() const;
  void paintLineNumbers(QPaintEvent* event);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void updateMarks();
  QWidget* gutter_ = nullptr;
  std::vector<Mark> marks_;
};

}  // namespace shardscope::gui
