#include "app/gui/common/json_highlighter.hpp"

namespace shardscope::gui {
namespace {

QTextCharFormat color_format(const QColor& color, bool bold = false) {
  QTextCharFormat f;
  f.setForeground(color);
  if (bold) f.setFontWeight(QFont::Bold);
  return f;
}

}  // namespace

JsonHighlighter::JsonHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {
  // Later rules win: a key (string followed by ':') is recoloured after the generic string rule.
  rules_.push_back({QRegularExpression(R"(-?\b\d+(\.\d+)?([eE][+-]?\d+)?\b)"), color_format(QColor(9, 134, 88))});
  rules_.push_back({QRegularExpression(R"(\b(true|false|null)\b)"), color_format(QColor(0, 0, 255), true)});
  rules_.push_back({QRegularExpression(R"("(?:[^"\\]|\\.)*")"), color_format(QColor(163, 21, 21))});
  rules_.push_back({QRegularExpression(R"("(?:[^"\\]|\\.)*"(?=\s*:))"), color_format(QColor(4, 81, 165), true)});
  comment_ = color_format(QColor(106, 153, 85));
  comment_.setFontItalic(true);
}

void JsonHighlighter::highlightBlock(const QString& text) {
  for (const Rule& rule : rules_) {
    auto it = rule.pattern.globalMatch(text);
    while (it.hasNext()) {
      const auto match = it.next();
      setFormat(static_cast<int>(match.capturedStart()), static_cast<int>(match.capturedLength()), rule.format);
    }
  }
  // A comment starts at // or # outside a string and runs to the end of the line.
  bool in_string = false;
  for (int i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    if (c == '\\' && in_string) {
      ++i;
    } else if (c == '"') {
      in_string = !in_string;
    } else if (!in_string && (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/'))) {
      setFormat(i, static_cast<int>(text.size()) - i, comment_);
      break;
    }
  }
}

}  // namespace shardscope::gui
