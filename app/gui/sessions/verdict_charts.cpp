#include "app/gui/sessions/verdict_charts.hpp"

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "app/gui/sessions/verdict_models.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

// One graph of points with error bars (along x for the forest plot, along y for the trend).
QCPGraph* add_points(QCustomPlot* plot, const QColor& color, QCPErrorBars::ErrorType direction) {
  QCPGraph* g = plot->addGraph();
  g->setLineStyle(QCPGraph::lsNone);
  g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 8));
  auto* bars = new QCPErrorBars(plot->xAxis, plot->yAxis);
  bars->setDataPlottable(g);
  bars->setErrorType(direction);
  bars->setPen(QPen(color, 2));
  bars->setWhiskerWidth(6);
  bars->setName(QString());
  return g;
}

QCPErrorBars* bars_of(QCustomPlot* plot, QCPGraph* g) {
  for (int i = 0; i < plot->plottableCount(); ++i)
    if (auto* b = qobject_cast<QCPErrorBars*>(plot->plottable(i)); b && b->dataPlottable() == g) return b;
  return nullptr;
}

// A short vertical stroke: the threshold's place on a metric's row.
QCPScatterStyle threshold_mark() {
  QPainterPath stroke;
  stroke.moveTo(0, -4);
  stroke.lineTo(0, 4);
  return QCPScatterStyle(stroke, QPen(QColor(0x55, 0x55, 0x55), 2), Qt::NoBrush, 8);
}

void reset(QCustomPlot* plot) {
  plot->clearPlottables();
  plot->clearItems();
  plot->legend->setVisible(false);
}

}  // namespace

void draw_verdict_intervals(QCustomPlot* plot, const ss::RegressionReport& report) {
  reset(plot);
  const auto& metrics = report.metrics;
  const int n = static_cast<int>(metrics.size());
  auto labels = QSharedPointer<QCPAxisTickerText>::create();
  QCPGraph* thresholds = plot->addGraph();
  thresholds->setLineStyle(QCPGraph::lsNone);
  thresholds->setScatterStyle(threshold_mark());
  double lo = -1, hi = 1;
  for (int i = 0; i < n; ++i) {
    const auto& m = metrics[static_cast<std::size_t>(i)];
    const double y = n - 1 - i;  // the first metric on top, as in the table
    const RowTone tone = verdict_tone(m.verdict);
    QCPGraph* g = add_points(plot, tone_color(tone), QCPErrorBars::etKeyError);
    g->addData(100 * m.change.estimate, y);
    bars_of(plot, g)->addData(100 * (m.change.estimate - m.change.low), 100 * (m.change.high - m.change.estimate));
    const double t = 100 * m.threshold * (m.higher_is_worse ? 1 : -1);
    thresholds->addData(t, y);
    labels->addTick(y, QString::fromStdString(m.metric));
    lo = std::min({lo, 100 * m.change.low, t}), hi = std::max({hi, 100 * m.change.high, t});
  }
  plot->yAxis->setTicker(labels);
  plot->yAxis->setRange(-0.7, std::max(0, n - 1) + 0.7);
  plot->yAxis->grid()->setVisible(false);
  // A row per metric: on a 1366 x 768 screen the chart gives a row about 15 px, less than a line of
  // the default font, so the names are set a size smaller to stay apart.
  QFont small = plot->yAxis->tickLabelFont();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  plot->yAxis->setTickLabelFont(small);
  plot->xAxis->setLabel(QObject::tr("change (%), 95% interval; | threshold"));
  plot->setToolTip(QObject::tr("Each metric's change against the baseline with its 95% interval, in its verdict's colour; "
                               "| marks the threshold on the metric's worse side, the dashed line 0"));
  plot->xAxis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(plot->xAxis));
  const double pad = 0.08 * (hi - lo);
  plot->xAxis->setRange(lo - pad, hi + pad);
  auto* zero = new QCPItemStraightLine(plot);
  zero->point1->setCoords(0, 0);
  zero->point2->setCoords(0, 1);
  zero->setPen(QPen(QColor(0x90, 0x90, 0x90), 1, Qt::DashLine));
  plot->replot();
}

void draw_trend(QCustomPlot* plot, const TrendView& view) {
  reset(plot);
  const auto& groups = view.report.groups;
  auto labels = QSharedPointer<QCPAxisTickerText>::create();
  QCPGraph* line = add_points(plot, QColor(31, 119, 180), QCPErrorBars::etValueError);
  line->setLineStyle(QCPGraph::lsLine);
  line->setPen(QPen(QColor(31, 119, 180), 1.5));
  QCPGraph* worse = add_points(plot, tone_color(RowTone::kRegression), QCPErrorBars::etValueError);
  QCPGraph* better = add_points(plot, tone_color(RowTone::kImprovement), QCPErrorBars::etValueError);
  worse->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, tone_color(RowTone::kRegression), tone_color(RowTone::kRegression), 12));
  better->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, tone_color(RowTone::kImprovement), tone_color(RowTone::kImprovement), 12));
  const double s = view.axis_scale;
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const double x = static_cast<double>(i), v = g.value.estimate / s;
    line->addData(x, v);
    bars_of(plot, line)->addData(v - g.value.low / s, g.value.high / s - v);
    lo = std::min(lo, g.value.low / s), hi = std::max(hi, g.value.high / s);
    const auto step = g.from_previous ? g.from_previous->verdict : ss::Verdict::kWithinNoise;
    if (step == ss::Verdict::kRegression || step == ss::Verdict::kImprovement) {
      QCPGraph* mark = step == ss::Verdict::kRegression ? worse : better;
      mark->addData(x, v);
      bars_of(plot, mark)->addData(0, 0);
    }
    QString key = QString::fromStdString(g.key);
    if (key.size() > 18) key = key.left(8) + QChar(0x2026) + key.right(8);  // the table keeps the whole key
    labels->addTick(x, key);
  }
  plot->xAxis->setTicker(labels);
  plot->xAxis->setTickLabelRotation(groups.size() > 6 ? 30 : 0);
  plot->xAxis->setLabel(QString::fromStdString(ss::trend_grouping_name(view.report.grouping)));
  plot->xAxis->setRange(-0.5, std::max<double>(0, static_cast<double>(groups.size()) - 1) + 0.5);
  plot->yAxis->setLabel(QString::fromStdString(view.axis_title));
  plot->yAxis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(plot->yAxis));
  if (groups.empty() || !std::isfinite(lo)) {
    plot->yAxis->setRange(0, 1);
  } else {
    const double pad = std::max({0.08 * (hi - lo), 0.02 * std::max(std::fabs(hi), std::fabs(lo)), 1e-12});
    plot->yAxis->setRange(lo - pad, hi + pad);
  }
  plot->replot();
}

}  // namespace shardscope::gui
