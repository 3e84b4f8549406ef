#include "app/gui/common/code_editor.hpp"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QPainter>
#include <QTextBlock>
#include <QToolTip>

namespace shardscope::gui {
namespace {

class Gutter : public QWidget {
 public:
  explicit Gutter(CodeEditor* editor) : QWidget(editor), editor_(editor) {}
  QSize sizeHint() const override { return {editor_->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { editor_->paintLineNumbers(event); }

 private:
  CodeEditor* editor_;
};

}  // namespace

CodeEditor::CodeEditor(QWidget* parent) : QPlainTextEdit(parent) {
  gutter_ = new Gutter(this);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabStopDistance(fontMetrics().horizontalAdvance(' ') * 2);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { setViewportMargins(lineNumberAreaWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy)
      gutter_->scroll(0, dy);
    else
      gutter_->update(0, rect.y(), gutter_->width(), rect.height());
  });
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
}

int CodeEditor::lineNumberAreaWidth() const {
  int digits = 1;
  for (int max = std::max(1, blockCount()); max >= 10; max /= 10) ++digits;
  return 8 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void CodeEditor::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect r = contentsRect();
  gutter_->setGeometry(QRect(r.left(), r.top(), lineNumberAreaWidth(), r.height()));
}

void CodeEditor::paintLineNumbers(QPaintEvent* event) {
  QPainter painter(gutter_);
  painter.fillRect(event->rect(), palette().color(QPalette::AlternateBase));
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  while (block.isValid() && top <= event->rect().bottom()) {
    const int bottom = top + qRound(blockBoundingRect(block).height());
    if (block.isVisible() && bottom >= event->rect().top()) {
      const int line = block.blockNumber() + 1;
      QColor color = palette().color(QPalette::PlaceholderText);
      for (const Mark& mark : marks_)
        if (mark.line == line) color = mark.error ? QColor(200, 0, 0) : QColor(220, 120, 0);
      painter.setPen(color);
      painter.drawText(0, top, gutter_->width() - 4, fontMetrics().height(), Qt::AlignRight, QString::number(line));
    }
    block = block.next();
    top = bottom;
  }
}

void CodeEditor::selectLine(int line) {
  const QTextBlock block = document()->findBlockByNumber(std::max(0, line - 1));
  if (!block.isValid()) return;
  QTextCursor cursor(block);
  cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
  setTextCursor(cursor);
  centerCursor();
  setFocus();
}

void CodeEditor::setMarks(std::vector<Mark> marks) {
  marks_ = std::move(marks);
  updateMarks();
  gutter_->update();
}

void CodeEditor::updateMarks() {
  QList<QTextEdit::ExtraSelection> selections;
  for (const Mark& mark : marks_) {
    const QTextBlock block = document()->findBlockByNumber(mark.line - 1);
    if (!block.isValid()) continue;
    QTextEdit::ExtraSelection selection;
    selection.cursor = QTextCursor(block);
    selection.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    selection.format.setUnderlineStyle(QTextCharFormat::WaveUnderline);
    selection.format.setUnderlineColor(mark.error ? Qt::red : QColor(230, 140, 0));
    selections << selection;
  }
  setExtraSelections(selections);
}

bool CodeEditor::event(QEvent* event) {
  // Hovering an underlined line shows its diagnostics, as IDEs do.
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int line = cursorForPosition(viewport()->mapFrom(this, help->pos())).blockNumber() + 1;
    QStringList messages;
    for (const Mark& mark : marks_)
      if (mark.line == line) messages << mark.message;
    if (messages.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), messages.join('\n'), this);
    return true;
  }
  return QPlainTextEdit::event(event);
}

void CodeEditor::replaceTextUndoable(const QString& text) {
  const QString old = toPlainText();
  if (old == text) return;
  int prefix = 0;
  const int common = std::min(old.size(), text.size());
  while (prefix < common && old[prefix] == text[prefix]) ++prefix;
  int suffix = 0;
  while (suffix < common - prefix && old[old.size() - 1 - suffix] == text[text.size() - 1 - suffix]) ++suffix;
  QTextCursor cursor(document());
  cursor.beginEditBlock();  // one undo step for the whole form edit
  cursor.setPosition(prefix);
  cursor.setPosition(static_cast<int>(old.size()) - suffix, QTextCursor::KeepAnchor);
  cursor.insertText(text.mid(prefix, text.size() - prefix - suffix));
  cursor.endEditBlock();
}

}  // namespace shardscope::gui
