#include "app/gui/tune/tune_scatter.hpp"

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/tune/tune_trials_model.hpp"

namespace shardscope::gui {
namespace {

constexpr double kMiB = 1048576.0;
constexpr double kGiB = 1073741824.0;

struct ScatterSeries {
  QString name;
  QCPScatterStyle style;
  std::vector<std::size_t> points;  // indices into view.points, sorted by x
};

QCPScatterStyle mark_style(QCPScatterStyle::ScatterShape shape, const QColor& color, double size, bool filled) {
  return QCPScatterStyle(shape, QPen(color, 1.6), filled ? QBrush(color) : QBrush(Qt::white), size);
}

// The series in drawing order (later ones on top), each with its points.
std::vector<ScatterSeries> series_of(const TuneView& view, const std::vector<std::size_t>& by_x) {
  std::vector<ScatterSeries> s = {
      {kScatterPredicted, mark_style(QCPScatterStyle::ssDiamond, trial_mark_color(TrialMark::kOk), 8, false), {}},
      {kScatterPruned, mark_style(QCPScatterStyle::ssCross, trial_mark_color(TrialMark::kPruned), 9, false), {}},
      {kScatterSkipped, mark_style(QCPScatterStyle::ssPlus, trial_mark_color(TrialMark::kSkipped), 9, false), {}},
      {kScatterFailed, mark_style(QCPScatterStyle::ssCrossCircle, trial_mark_color(TrialMark::kFailed), 9, false), {}},
      {kScatterOom, mark_style(QCPScatterStyle::ssTriangle, trial_mark_color(TrialMark::kOutOfMemory), 10, true), {}},
      {kScatterRunning, mark_style(QCPScatterStyle::ssCircle, trial_mark_color(TrialMark::kRunning), 9, false), {}},
      {kScatterRan, mark_style(QCPScatterStyle::ssDisc, trial_mark_color(TrialMark::kOk), 8, true), {}},
      {kScatterBest, QCPScatterStyle(QCPScatterStyle::ssStar, QPen(QColor(230, 160, 0), 2.5), QBrush(Qt::NoBrush), 18), {}}};
  for (std::size_t i : by_x) {
    const ScatterPoint& p = view.points[i];
    switch (p.mark) {
      case TrialMark::kOk:
        if (p.predicted_bytes) s[0].points.push_back(i);
        s[6].points.push_back(i);
        break;
      case TrialMark::kPruned: s[1].points.push_back(i); break;
      case TrialMark::kSkipped: s[2].points.push_back(i); break;
      case TrialMark::kFailed: s[3].points.push_back(i); break;
      case TrialMark::kOutOfMemory: s[4].points.push_back(i); break;
      case TrialMark::kRunning: s[5].points.push_back(i); break;
    }
    if (p.best) s[7].points.push_back(i);
  }
  return s;
}

double x_of(const ScatterPoint& p, bool predicted, double unit) {
  return (predicted ? *p.predicted_bytes : p.x_bytes) / unit;
}

QCPGraph* add_series(QCustomPlot* plot, const TuneView& view, const ScatterSeries& s, double unit, ScatterIndex& index) {
  QVector<double> keys, values;
  std::vector<std::size_t> rows;
  const bool predicted = s.name == kScatterPredicted;
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i : s.points) order.push_back({x_of(view.points[i], predicted, unit), i});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [x, i] : order) {
    keys << x;
    values << view.points[i].y;
    rows.push_back(view.points[i].row);
  }
  QCPGraph* graph = plot->addGraph();
  graph->setName(s.name);
  graph->setLineStyle(QCPGraph::lsNone);
  graph->setScatterStyle(s.style);
  graph->setData(keys, values, true);  // sorted here, so `rows` follows the data's order
  index.graphs.push_back(graph);
  index.rows.push_back(std::move(rows));
  return graph;
}

// The dashed segment from each trial's prediction to its measured peak.
void add_prediction_links(QCustomPlot* plot, const TuneView& view, double unit) {
  for (const ScatterPoint& p : view.points) {
    if (p.mark != TrialMark::kOk || !p.predicted_bytes) continue;
    auto* link = new QCPItemLine(plot);
    link->setPen(QPen(QColor(31, 119, 180, 120), 1, Qt::DashLine));
    link->start->setCoords(*p.predicted_bytes / unit, p.y);
    link->end->setCoords(p.x_bytes / unit, p.y);
  }
}

struct XRange {
  double low = 0, high = 1;
  bool log = false;
};

XRange x_range(const TuneView& view, double unit) {
  double low = INFINITY, high = 0;
  auto take = [&](double bytes) {
    if (bytes <= 0) return;
    low = std::min(low, bytes / unit);
    high = std::max(high, bytes / unit);
  };
  for (const auto& p : view.points) {
    take(p.x_bytes);
    if (p.predicted_bytes) take(*p.predicted_bytes);
  }
  if (view.usable_bytes) take(*view.usable_bytes);
  if (high <= 0) return {};
  if (high / low > 30) return {low / 1.5, high * 1.5, true};
  const double pad = std::max((high - low) * 0.08, high * 0.05);
  return {std::max(0.0, low - pad), high + pad, false};
}

double memory_unit(const TuneView& view) {
  double high = view.usable_bytes.value_or(0);
  for (const auto& p : view.points) high = std::max({high, p.x_bytes, p.predicted_bytes.value_or(0)});
  return high >= kGiB ? kGiB : kMiB;
}

void set_axes(QCustomPlot* plot, const TuneView& view, double unit, double top) {
  const XRange x = x_range(view, unit);
  plot->xAxis->setScaleType(x.log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (x.log) plot->xAxis->setTicker(QSharedPointer<LogTicker>::create());
  else plot->xAxis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(plot->xAxis));
  plot->xAxis->setRange(x.low, x.high);
  plot->xAxis->setLabel(QObject::tr("peak memory per rank (%1%2)")
                            .arg(unit == kGiB ? "GiB" : "MiB", x.log ? QObject::tr(", log scale") : QString()));
  plot->yAxis->setLabel(QString::fromStdString(view.throughput_label));
  plot->yAxis->setRange(-top * 0.04, top * 1.12);  // trials without a throughput sit on y = 0, above the axis
}

void add_usable_line(QCustomPlot* plot, const TuneView& view, double unit, double top) {
  if (!view.usable_bytes) return;
  QCPGraph* line = plot->addGraph();
  line->setName(kScatterUsable);
  line->setPen(QPen(QColor(214, 39, 40), 1.2, Qt::DashLine));
  const double x = *view.usable_bytes / unit;
  line->setData({x, x}, {-top, top * 2}, true);
}

// An empty legend left in the layout's column narrows the axes to its own width: it is taken out
// while there is nothing to name, and put back under the axes when there is.
void show_legend(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  const bool any = legend->itemCount() > 0;
  if (!any && legend->layout() == plot->plotLayout()) {
    plot->plotLayout()->take(legend);
    plot->plotLayout()->simplify();
  }
  if (any) place_legend_below(plot, 4);
  legend->setVisible(any);
}

}  // namespace

void setup_tune_scatter(QCustomPlot* plot) {
  plot->setInteractions(QCP::iRangeZoom | QCP::iRangeDrag);
  plot->legend->setFont(QFont(plot->font().family(), 8));
  plot->yAxis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(plot->yAxis));
}

ScatterIndex draw_tune_scatter(QCustomPlot* plot, const TuneView& view) {
  plot->clearGraphs();
  plot->clearItems();
  ScatterIndex index;
  const double unit = memory_unit(view);
  double top = 0;
  for (const auto& p : view.points) top = std::max(top, p.y);
  if (top <= 0) top = 1;
  std::vector<std::size_t> all(view.points.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  add_usable_line(plot, view, unit, top);
  add_prediction_links(plot, view, unit);
  for (const ScatterSeries& s : series_of(view, all)) {
    QCPGraph* graph = add_series(plot, view, s, unit, index);
    if (s.points.empty()) graph->removeFromLegend();  // the legend names what is drawn
  }
  set_axes(plot, view, unit, top);
  show_legend(plot);
  plot->replot();
  return index;
}

QCPGraph* scatter_graph(QCustomPlot* plot, const QString& name) {
  for (int i = 0; i < plot->graphCount(); ++i)
    if (plot->graph(i)->name() == name) return plot->graph(i);
  return nullptr;
}

int scatter_row_at(const QCustomPlot* plot, const ScatterIndex& index, const QPointF& pos, double radius) {
  int best_row = -1;
  double best_distance = radius;
  for (std::size_t g = 0; g < index.graphs.size(); ++g) {
    const QCPGraph* graph = index.graphs[g];
    int i = 0;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it, ++i) {
      const QPointF at(plot->xAxis->coordToPixel(it->key), plot->yAxis->coordToPixel(it->value));
      const double d = std::hypot(at.x() - pos.x(), at.y() - pos.y());
      if (d <= best_distance) {
        best_distance = d;
        best_row = static_cast<int>(index.rows[g][static_cast<std::size_t>(i)]);
      }
    }
  }
  return best_row;
}

}  // namespace shardscope::gui
