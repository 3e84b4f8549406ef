#include "tests/gui/common/chart_checks.hpp"

#include <cmath>

#include <QAbstractButton>
#include <QCheckBox>
#include <QFontMetrics>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <qcustomplot.h>

namespace shardscope::gui::testing {
namespace {

QString chart_name(const QCPAxis* axis) {
  const QCustomPlot* plot = axis->parentPlot();
  return QString("chart '%1' (%2 axis '%3')")
      .arg(plot->yAxis->label(), axis->orientation() == Qt::Horizontal ? "x" : "y", axis->label());
}

}  // namespace

QString tick_label_problem(const QCPAxis* axis) {
  const QFontMetrics metrics(axis->tickLabelFont());
  const QVector<double> ticks = axis->tickVector();
  const QVector<QString> labels = axis->tickVectorLabels();
  const bool horizontal = axis->orientation() == Qt::Horizontal;
  double last_pixel = 0;
  QString last_label;
  bool have_last = false;
  for (int i = 0; i < ticks.size() && i < labels.size(); ++i) {
    if (!axis->range().contains(ticks[i])) continue;  // QCustomPlot keeps a tick beyond each end, undrawn
    const double pixel = axis->coordToPixel(ticks[i]);
    if (have_last) {
      if (labels[i] == last_label)
        return QString("%1: the label '%2' twice").arg(chart_name(axis), labels[i]);
      const double gap = std::abs(pixel - last_pixel);
      const double needed = horizontal ? (metrics.horizontalAdvance(last_label) + metrics.horizontalAdvance(labels[i])) / 2.0 +
                                             metrics.horizontalAdvance('0') / 2.0
                                       : metrics.height();
      if (gap < needed)
        return QString("%1: '%2' and '%3' are %4 px apart, need %5").arg(chart_name(axis), last_label, labels[i]).arg(gap).arg(needed);
    }
    last_pixel = pixel;
    last_label = labels[i];
    have_last = true;
  }
  return {};
}

QString step_tick_problem(const QCPAxis* axis) {
  for (double tick : axis->tickVector())
    if (axis->range().contains(tick) && std::abs(tick - std::round(tick)) > 1e-9)
      return QString("%1: a tick at step %2").arg(chart_name(axis)).arg(tick);
  return tick_label_problem(axis);
}

QString chart_problems(const QWidget* root) {
  for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
    if (!plot->isVisible()) continue;
    plot->replot();
    const QString x = plot->xAxis->label() == "step" ? step_tick_problem(plot->xAxis) : QString();
    if (!x.isEmpty()) return x;
    if (const QString y = tick_label_problem(plot->yAxis); !y.isEmpty()) return y;
  }
  return {};
}

QString clipped_text(const QWidget* root) {
  auto visible = [root](const QWidget* w) { return w->isVisibleTo(root) && w->width() > 0; };
  for (const QLabel* label : root->findChildren<QLabel*>()) {
    // A wrapped label lower than its text needs at its width loses its last lines (a stylesheet's
    // padding, which QLabel's height for width does not count, cut the preflight's last line).
    if (visible(label) && label->wordWrap() && !label->text().isEmpty() && label->maximumHeight() == QWIDGETSIZE_MAX &&
        label->height() + 1 < label->heightForWidth(label->width()))
      return QString("wrapped label '%1' is %2 px high, its text needs %3 at %4 px")
          .arg(label->text().left(80)).arg(label->height()).arg(label->heightForWidth(label->width())).arg(label->width());
    if (!visible(label) || label->wordWrap() || label->text().isEmpty() || label->textFormat() == Qt::RichText ||
        label->text().contains('\n') || Qt::mightBeRichText(label->text()) || label->sizePolicy().horizontalPolicy() == QSizePolicy::Ignored)
      continue;
    QString shown = label->text();
    if (label->buddy()) shown.replace(QRegularExpression("&(.)"), "\\1");  // a mnemonic's & is not drawn, && is one &
    const int needed = label->fontMetrics().horizontalAdvance(shown);
    if (needed > label->contentsRect().width() + 1)
      return QString("label '%1' needs %2 px, has %3").arg(shown).arg(needed).arg(label->contentsRect().width());
  }
  for (const QAbstractButton* button : root->findChildren<QAbstractButton*>()) {
    if (!visible(button) || button->text().isEmpty()) continue;
    // A push button's text with a little frame; a check box's indicator and text (its size hint, no minimum width).
    int needed = 0;
    if (qobject_cast<const QPushButton*>(button))
      needed = button->fontMetrics().horizontalAdvance(QString(button->text()).remove('&')) + 6;
    else if (qobject_cast<const QCheckBox*>(button) || qobject_cast<const QRadioButton*>(button))
      needed = button->sizeHint().width() - 4;
    if (needed > button->width())
      return QString("button '%1' is %2 px wide, its text needs %3").arg(button->text()).arg(button->width()).arg(needed);
  }
  for (const QGroupBox* box : root->findChildren<QGroupBox*>()) {
    if (!visible(box) || box->title().isEmpty()) continue;
    const int needed = box->fontMetrics().horizontalAdvance(box->title()) + 16;
    if (needed > box->width()) return QString("group '%1' is %2 px wide, its title needs %3").arg(box->title()).arg(box->width()).arg(needed);
  }
  return {};
}

}  // namespace shardscope::gui::testing
