#include "app/gui/common/chart_tickers.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetrics>

namespace shardscope::gui {

double StepTicker::integer_step(double span, int count) {
  const double exact = std::max(1.0, span / std::max(1, count));
  const double decade = std::pow(10.0, std::floor(std::log10(exact)));
  // 2.5 only from 25 up, where it is still an integer step (25, 250): 120 steps at 5 ticks get 25, not 50.
  for (double mantissa : {1.0, 2.0, 2.5, 5.0, 10.0})
    if ((mantissa != 2.5 || decade >= 10) && mantissa * decade >= exact - 1e-9 * exact) return mantissa * decade;
  return 10 * decade;
}

int ticks_that_fit(const QCPAxis* axis, const QString& sample_label, int fewest, int most) {
  // Ticks are made before the axes are laid out: the plot's new size, less last layout's margins.
  const QCPAxisRect* rect = axis->axisRect();
  const QRect viewport = axis->parentPlot()->viewport();
  const bool horizontal = axis->orientation() == Qt::Horizontal;
  const int length = horizontal ? viewport.width() - rect->margins().left() - rect->margins().right()
                                : viewport.height() - rect->margins().top() - rect->margins().bottom();
  const QFontMetrics metrics(axis->tickLabelFont());
  const int per_tick = horizontal ? metrics.horizontalAdvance(sample_label + "0") : metrics.height() * 3 / 2;
  // A "nice" step can be up to 2.5 x range / count (1 -> 2.5 -> 5): 90 % of the length to share.
  return std::clamp(length * 9 / 10 / std::max(1, per_tick), fewest, most);
}

void keep_apart(const QCPAxis* axis, QVector<double>& ticks, QVector<QString>& labels) {
  if (ticks.size() != labels.size() || ticks.size() < 2) return;
  const QFontMetrics metrics(axis->tickLabelFont());
  const bool horizontal = axis->orientation() == Qt::Horizontal;
  QVector<double> kept_ticks;
  QVector<QString> kept_labels;
  for (int i = 0; i < ticks.size(); ++i) {
    if (!kept_ticks.isEmpty()) {
      const double gap = std::abs(axis->coordToPixel(ticks[i]) - axis->coordToPixel(kept_ticks.back()));
      const double needed = horizontal ? (metrics.horizontalAdvance(labels[i]) + metrics.horizontalAdvance(kept_labels.back())) / 2.0 +
                                             metrics.horizontalAdvance('0')
                                       : metrics.height() * 1.15;
      if (gap < needed) continue;
    }
    kept_ticks << ticks[i];
    kept_labels << labels[i];
  }
  ticks = kept_ticks;
  labels = kept_labels;
}

double StepTicker::getTickStep(const QCPRange& range) {
  const auto widest = static_cast<qint64>(std::max(std::abs(range.lower), std::abs(range.upper)) + 0.5);
  return integer_step(range.size(), ticks_that_fit(axis_, QString::number(widest), 1, max_ticks_));
}

int StepTicker::getSubTickCount(double tick_step) {
  // Sub-ticks on integers too: 2 -> 1, 5 -> 4, 10 -> 4 (every 2), 20 -> 3 (every 5), 25 -> 4 (every 5),
  // 50 -> 4 (every 10).
  const auto step = static_cast<qint64>(std::llround(tick_step));
  if (step < 10) return static_cast<int>(step - 1);
  qint64 decade = 1;
  while (step / decade >= 10) decade *= 10;
  return step / decade == 2 && step % decade == 0 ? 3 : 4;
}

QString StepTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
  return QString::number(static_cast<qint64>(std::llround(tick)));  // "1000", not "1e+03"
}

QVector<double> LogTicker::createTickVector(double tick_step, const QCPRange& range) {
  in_decades_ = range.lower <= 0 || std::log10(range.upper / range.lower) >= 1.6;  // QCustomPlot's own threshold
  if (in_decades_) return QCPAxisTickerLog::createTickVector(tick_step, range);
  const int first = static_cast<int>(std::floor(std::log10(range.lower)));
  const int last = static_cast<int>(std::ceil(std::log10(range.upper)));
  for (const std::vector<double>& mantissas : {std::vector<double>{1, 2, 5}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    QVector<double> ticks;
    for (int exponent = first; exponent <= last; ++exponent)
      for (double m : mantissas)
        if (const double v = m * std::pow(10.0, exponent); range.contains(v)) ticks << v;
    if (ticks.size() >= 3 || mantissas.size() > 3) return ticks;
  }
  return {};
}

QVector<double> LogTicker::createSubTickVector(int sub_tick_count, const QVector<double>& ticks) {
  // Between 1-2-5 ticks linear sub-ticks would be uneven: none.
  return in_decades_ ? QCPAxisTickerLog::createSubTickVector(sub_tick_count, ticks) : QVector<double>();
}

void use_step_ticks(QCPAxis* axis, int max_ticks) { axis->setTicker(QSharedPointer<StepTicker>::create(axis, max_ticks)); }

}  // namespace shardscope::gui
