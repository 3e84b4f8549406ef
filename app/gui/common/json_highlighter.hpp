#pragma once
// Syntax colours for DeepSpeed configs: keys, strings, numbers, true/false/null, and the
// comments hjson allows (// and #), so a commented-out key is visibly inactive.

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace shardscope::gui {

class JsonHighlighter : public QSyntaxHighlighter {
  Q_OBJECT

 public:
  explicit JsonHighlighter(QTextDocument* document);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  std::vector<Rule> rules_;
  QTextCharFormat comment_;
};

}  // namespace shardscope::gui
