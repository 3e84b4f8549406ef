#include "app/gui/launch/live_plots.hpp"

#include <algorithm>
#include <cmath>

#include <QEvent>
#include <QFontMetrics>
#include <QGridLayout>
#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "profiler/profile_analyses.hpp"

namespace shardscope::gui {
namespace {

struct LiveMetric {
  const char* name;
  std::optional<double> (*get)(const sessions::StepMetrics&);
};

std::optional<double> bytes(const std::optional<std::int64_t>& v) {
  return v ? std::optional<double>(double(*v)) : std::nullopt;
}

const LiveMetric kLiveMetrics[] = {
    {"loss", [](const sessions::StepMetrics& m) { return m.loss; }},
    {"lr", [](const sessions::StepMetrics& m) { return m.lr; }},
    {"loss_scale", [](const sessions::StepMetrics& m) { return m.loss_scale; }},
    {"grad_norm", [](const sessions::StepMetrics& m) { return m.grad_norm; }},
    {"tokens_per_s", nullptr},  // tokens/s or samples/s: addThroughput
    {"tflops", [](const sessions::StepMetrics& m) { return m.tflops; }},
    {"mem_allocated", [](const sessions::StepMetrics& m) { return bytes(m.mem_allocated_bytes); }},
};

// A dot per step while a curve is short: the flops profiler's one TFLOP/s figure (profile_step) is
// a line of one point. A long curve is a line only, where dots would blot out its shape.
void show_dots_while_short(QCPGraph* graph) {
  constexpr int kDotsUpTo = 30;
  const bool dots = graph->dataCount() <= kDotsUpTo;
  if (dots != (graph->scatterStyle().shape() != QCPScatterStyle::ssNone))
    graph->setScatterStyle(dots ? QCPScatterStyle(QCPScatterStyle::ssDisc, 4) : QCPScatterStyle());
}

QCPGraph* rank_graph(QCustomPlot* plot, int rank) {
  while (plot->graphCount() <= rank) {
    auto* graph = plot->addGraph();
    const int r = plot->graphCount() - 1;
    graph->setPen(QPen(series_color(static_cast<std::size_t>(r)), 1.5));
    graph->setName(QObject::tr("rank %1").arg(r));
  }
  return plot->graph(rank);
}

// Step ticks that fit their axis: as many (3 at most) as its width holds labels, at integer steps
// only. A chart's axes are 70-110 px wide at 1366 px, and QCustomPlot's readable steps gave
// "50 100 150 200" there, run together into "50100150200" (chart_tickers.hpp).
void fit_step_ticks(QCPAxis* axis) { use_step_ticks(axis, 3); }

// Value ticks as many as the chart's height holds (QCustomPlot's five were 11 px apart at 110 px).
void fit_value_ticks(QCPAxis* axis) { axis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(axis)); }

// A point worth an axis: a chart of zeros or NaNs (a CPU run's TFLOP/s) is an empty chart.
bool has_drawable_point(const QCustomPlot* plot) {
  for (int g = 0; g < plot->graphCount(); ++g)
    for (const auto& point : *plot->graph(g)->data())
      if (std::isfinite(point.value) && point.value != 0.0) return true;
  return false;
}

// The first and last step the plot's curves or bars hold.
std::optional<QCPRange> step_extent(QCustomPlot* plot) {
  std::optional<QCPRange> extent;
  for (int i = 0; i < plot->plottableCount(); ++i) {
    bool found = false;
    const QCPRange r = plot->plottable(i)->getKeyRange(found);
    if (found) extent = extent ? QCPRange(std::min(extent->lower, r.lower), std::max(extent->upper, r.upper)) : r;
  }
  return extent;
}

QCPItemText* empty_note(QCustomPlot* plot) {
  auto* note = new QCPItemText(plot);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setCoords(0.5, 0.5);
  note->setClipToAxisRect(false);
  note->setColor(Qt::gray);
  note->setFont(QFont(plot->font().family(), 7));
  note->setTextAlignment(Qt::AlignCenter);
  note->setVisible(false);
  return note;
}

}  // namespace

LivePlots::LivePlots(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(2);
  int i = 0;
  for (const auto& m : kLiveMetrics) {
    auto* plot = new QCustomPlot;
    plot->setMinimumSize(kChartMinimum);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->xAxis->setLabel(tr("step"));
    fit_step_ticks(plot->xAxis);
    fit_value_ticks(plot->yAxis);
    // "memory allocated (GiB)" is taller than the chart's axes at the window's minimum size.
    plot->yAxis->setLabel(m.name == std::string("mem_allocated") ? memoryTitle() : metric_title(m.name));
    grid->addWidget(plot, i / 4, i % 4);
    charts_.emplace_back(m.name, plot);
    notes_[m.name] = empty_note(plot);
    ++i;
  }
  breakdown_ = new QCustomPlot;
  breakdown_->setMinimumSize(kChartMinimum);
  breakdown_->xAxis->setLabel(tr("step"));
  fit_step_ticks(breakdown_->xAxis);
  fit_value_ticks(breakdown_->yAxis);
  breakdown_->yAxis->setLabel(tr("step time (ms)"));
  // Shown, and under the axes once the first step names its phases (placeBreakdownLegend).
  breakdown_->legend->setVisible(true);
  breakdown_->legend->setBorderPen(Qt::NoPen);
  breakdown_->legend->setFont(QFont(font().family(), 7));
  breakdown_->legend->setIconSize(10, 8);  // QCustomPlot's 32 x 18 swatch is a fifth of a chart this small
  breakdown_->legend->setIconTextPadding(3);
  place_legend_below(breakdown_, kPhaseLegendColumns);
  breakdown_->plotLayout()->setRowSpacing(0);  // the legend's own margins part it from the axis title
  breakdown_->installEventFilter(this);  // its legend's columns follow its width
  placeBreakdownLegend();  // out of the layout until the first step's phases
  grid->addWidget(breakdown_, 1, 3);
}

bool LivePlots::eventFilter(QObject* watched, QEvent* event) {
  if (watched == breakdown_ && event->type() == QEvent::Resize) fitBreakdownLegend();
  return QWidget::eventFilter(watched, event);
}

// Under the axes only while it has entries: an empty legend grid's maximum width is its margins,
// and the plot layout held the axes above it to that (50 px where the other charts had 108).
void LivePlots::placeBreakdownLegend() {
  QCPLegend* legend = breakdown_->legend;
  QCPLayoutGrid* layout = breakdown_->plotLayout();
  bool entries = false;
  for (int i = 0; i < legend->itemCount() && !entries; ++i) entries = legend->item(i) != nullptr;
  const bool placed = legend->layout() == layout;
  if (entries && !placed) {
    place_legend_below(breakdown_, legend->wrap());
  } else if (!entries && placed) {
    layout->take(legend);
    layout->simplify();
    legend->setOuterRect(QRect());  // nothing left to draw where it was
  }
}

// The breakdown's legend sits under its axes, as the Compare and Estimator charts have theirs
// (place_legend_below): inside them it hid a quarter of the data of a chart ~165 px wide at
// 1366 px. As many phases per row as the chart's width holds, so a narrow window gets more rows,
// never entries cut off at the right.
void LivePlots::fitBreakdownLegend() {
  placeBreakdownLegend();
  QCPLegend* legend = breakdown_->legend;
  int widest = 0;
  for (int i = 0; i < legend->itemCount(); ++i)  // a wrapped grid's last row may have empty cells
    if (QCPAbstractLegendItem* item = legend->item(i)) widest = std::max(widest, item->minimumOuterSizeHint().width());
  if (widest > 0) {
    const int room = breakdown_->width() - legend->margins().left() - legend->margins().right() + legend->columnSpacing();
    const int per_row = std::clamp(room / (widest + legend->columnSpacing()), 1, kPhaseLegendColumns);
    if (per_row != legend->wrap()) place_legend_below(breakdown_, per_row);
  }
  // The legend's rows add to the chart's minimum height rather than take from its bars.
  const int minimum = kChartMinimum.height() + legend->minimumOuterSizeHint().height();
  if (breakdown_->minimumHeight() != minimum) breakdown_->setMinimumHeight(minimum);
}

void LivePlots::clear() {
  for (QCustomPlot* plot : allPlots()) {  // a new run starts from empty axes, not the last run's
    plot->clearPlottables();
    plot->xAxis->setRange(0, 5);
    plot->yAxis->setRange(0, 5);
    plot->replot();
  }
  fitBreakdownLegend();  // no entries left
  breakdown_->replot();
  timers_.clear();
  step_ms_.clear();
  bands_.clear();  // their graphs went with clearPlottables
  focused_rank_ = -1;
  for (const auto& [name, plot] : charts_) BandHover::of(plot)->clear();
  last_step_ = -1;
  largest_memory_bytes_ = 0;
  memory_unit_ = ByteUnit{double(1ull << 30), "GiB"};
  chart("mem_allocated")->yAxis->setLabel(memoryTitle());
  showThroughputAs("tokens_per_s");
  for (const auto& [name, plot] : charts_) markEmpty(name, plot);
}

void LivePlots::setRunKind(RunKind kind) {
  kind_ = kind;
  for (const auto& [name, plot] : charts_) markEmpty(name, plot);
}

// The throughput chart holds one unit: samples/s only until a step brings tokens/s.
void LivePlots::showThroughputAs(const std::string& metric) {
  if (metric == throughput_metric_) return;
  QCustomPlot* plot = chart("tokens_per_s");
  plot->clearPlottables();
  bands_.erase("tokens_per_s");
  plot->yAxis->setLabel(metric_title(metric));
  throughput_metric_ = metric;
}

// Why a chart is empty, in words that fit a chart 140 px wide: what the run has to be told.
QString LivePlots::emptyHint(const std::string& metric) const {
  const bool watched = kind_ == RunKind::Watched;
  if (metric == "tokens_per_s")
    return watched ? tr("no throughput in\nthe log: set\n\"log_level\": \"info\"\nand steps_per_print")
                   : tr("no throughput yet");
  if (metric == "tflops")
    return watched ? tr("no TFLOP/s: enable\nthe flops_profiler\nblock") : tr("no TFLOP/s yet");
  if (metric == "loss_scale") return tr("no loss scale:\nfp16 runs have one");
  return watched ? tr("not in the run's log") : tr("no %1 yet").arg(metric_title(metric));
}

void LivePlots::markEmpty(const std::string& name, QCustomPlot* plot) {
  QCPItemText* note = notes_.at(name);
  const bool empty = !has_drawable_point(plot);
  note->setText(empty ? emptyHint(name) : QString());
  note->setVisible(empty);
  if (empty) plot->yAxis->setRange(0, 1);  // not QCustomPlot's 1e-6 band around a zero
}

QString LivePlots::emptyNote(const std::string& name) const {
  const auto it = notes_.find(name);
  return it != notes_.end() && it->second->visible() ? it->second->text() : QString();
}

// tokens/s where the step has it; else samples/s (DeepSpeed's CurrSamplesPerSec), labelled so.
void LivePlots::addThroughput(const sessions::StepMetrics& m) {
  if (m.tokens_per_s) {
    showThroughputAs("tokens_per_s");
    addPoint("tokens_per_s", m.rank, double(m.step), *m.tokens_per_s);
  } else if (m.samples_per_s && (throughput_metric_ == "samples_per_s" || chart("tokens_per_s")->graphCount() == 0)) {
    showThroughputAs("samples_per_s");
    addPoint("tokens_per_s", m.rank, double(m.step), *m.samples_per_s);
  }
}

void LivePlots::addPoint(const std::string& metric, int rank, double step, double value) {
  if (band_mode_) return addBandValue(metric, rank, static_cast<std::int64_t>(step), value);
  for (auto& [name, plot] : charts_)
    if (name == metric) {
      if (is_memory_metric(metric)) fitMemoryUnit(value);
      QCPGraph* graph = rank_graph(plot, rank);
      const double scaled = is_memory_metric(metric) ? value / memory_unit_.divisor : value;
      const auto it = graph->data()->findBegin(step, false);
      const bool known = it != graph->data()->constEnd() && it->key == step;
      if (known && it->value == scaled) return;  // a step read again, unchanged
      if (known) graph->data()->remove(step);    // read again with a new value: replace it
      graph->addData(step, scaled);
      show_dots_while_short(graph);
    }
}

QString LivePlots::memoryTitle() const { return tr("memory (%1)").arg(memory_unit_.name); }

// The memory chart's unit follows its largest value, as the tables' does: a CPU run's 3 MiB reads
// "3 MiB", not "0.00295 GiB". When a larger value changes the unit, the points drawn so far follow.
void LivePlots::fitMemoryUnit(double bytes) {
  largest_memory_bytes_ = std::max(largest_memory_bytes_, std::abs(bytes));
  const ByteUnit unit = byte_unit_for(largest_memory_bytes_);
  if (unit.name == memory_unit_.name) return;
  QCustomPlot* plot = chart("mem_allocated");
  const double factor = memory_unit_.divisor / unit.divisor;
  for (int g = 0; g < plot->graphCount(); ++g)
    for (auto& point : *plot->graph(g)->data()) point.value *= factor;
  memory_unit_ = unit;
  plot->yAxis->setLabel(memoryTitle());
}

void LivePlots::append(const LiveUpdate& update) {
  for (const auto& m : update.steps) {
    for (const auto& metric : kLiveMetrics)
      if (auto v = metric.get ? metric.get(m) : std::nullopt) addPoint(metric.name, m.rank, double(m.step), *v);
    addThroughput(m);
    if (m.step_time_ms) step_ms_[m.step] = std::max(step_ms_[m.step], *m.step_time_ms);
    last_step_ = std::max(last_step_, m.step);
  }
  for (const auto& t : update.timers) timers_[t.step] = t.timers;
  if (update.steps.empty() && update.timers.empty()) return;
  redrawBands();
  redrawBreakdown();
  rescale();
}

void LivePlots::redrawBreakdown() {
  // The profiler's phase analysis decides which timers are disjoint parts of a step (forward,
  // backward, step) and what is left as "other"; only those are stacked.
  std::vector<sessions::StepMetrics> steps;
  std::vector<sessions::TimerBreakdown> timers;
  const std::int64_t from = window_ > 0 ? last_step_ - window_ : INT64_MIN;
  for (auto it = timers_.lower_bound(from); it != timers_.end(); ++it) {
    timers.push_back({0, it->first, it->second});
    sessions::StepMetrics m;
    m.step = it->first;
    if (auto ms = step_ms_.find(it->first); ms != step_ms_.end()) m.step_time_ms = ms->second;
    steps.push_back(m);
  }
  const auto phases = profiler::compute_phase_breakdown(steps, timers);
  breakdown_->clearPlottables();
  if (phases.ranks.empty()) {
    fitBreakdownLegend();  // no entries: no rows to make room for
    return breakdown_->replot();
  }
  const auto& rank = phases.ranks.front();
  QCPBars* below = nullptr;
  std::size_t color = 0;
  auto add_layer = [&](const QString& name, auto value_of) {
    auto* bars = new QCPBars(breakdown_->xAxis, breakdown_->yAxis);
    bars->setName(name);
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(color++));
    bars->setWidth(0.9);
    for (const auto& s : rank.steps)
      if (auto v = value_of(s)) bars->addData(double(s.step), std::max(0.0, *v));
    if (below) bars->moveAbove(below);
    below = bars;
  };
  for (std::size_t c = 0; c < phases.columns.size(); ++c)
    if (phases.columns[c].top_level)
      add_layer(QString::fromStdString(phases.columns[c].name), [c](const profiler::PhaseStep& s) { return s.ms[c]; });
  add_layer(tr("other"), [](const profiler::PhaseStep& s) { return s.other_ms; });
  fitBreakdownLegend();  // the phases' names are known now
  breakdown_->replot();
}

std::map<std::string, double> LivePlots::breakdownAt(std::int64_t step) const {
  std::map<std::string, double> out;
  for (int i = 0; i < breakdown_->plottableCount(); ++i) {
    auto* bars = qobject_cast<QCPBars*>(breakdown_->plottable(i));
    auto it = bars->data()->findBegin(double(step), false);
    if (it != bars->data()->constEnd() && it->key == double(step)) out[bars->name().toStdString()] = it->value;
  }
  return out;
}

std::vector<QCustomPlot*> LivePlots::allPlots() const {
  std::vector<QCustomPlot*> plots;
  for (const auto& [name, plot] : charts_) plots.push_back(plot);
  plots.push_back(breakdown_);
  return plots;
}

void LivePlots::rescale() {
  for (const auto& [name, plot] : charts_) markEmpty(name, plot);
  for (QCustomPlot* plot : allPlots()) {
    if (follow_ && plot->plottableCount() > 0) {
      plot->xAxis->rescale();
      // One step (the flops profiler's single figure, a run's first step) is centred in a few steps,
      // not in QCustomPlot's old span around it, which ran into negative steps.
      if (const auto steps = step_extent(plot); steps && steps->size() < 2) {
        const double first = steps->lower >= 1 ? steps->lower - 1 : steps->lower - 0.5;
        plot->xAxis->setRange(first, first + std::max(2.0, steps->size() + 2));
      }
      if (window_ > 0 && last_step_ > window_) plot->xAxis->setRange(double(last_step_ - window_), double(last_step_) + 0.5);
      // Fit the values of the steps shown, not of the whole run (the first steps' loss is far off).
      QCPRange values;
      bool any = false;
      for (int i = 0; i < plot->plottableCount(); ++i) {
        bool found = false;
        const QCPRange r = plot->plottable(i)->getValueRange(found, QCP::sdBoth, plot->xAxis->range());
        if (!found) continue;
        values = any ? QCPRange(std::min(values.lower, r.lower), std::max(values.upper, r.upper)) : r;
        any = true;
      }
      if (any && (plot == breakdown_ || has_drawable_point(plot))) {  // an empty chart keeps markEmpty's 0..1
        // A constant curve (memory on the CPU) gets a band of +-5 % around it, not a sliver.
        const double span = values.upper - values.lower;
        const double pad = span > 1e-9 * std::abs(values.upper) ? 0.08 * span : std::max(1e-12, 0.05 * std::abs(values.upper));
        plot->yAxis->setRange(values.lower - pad, values.upper + pad);
      }
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

void LivePlots::setFollow(bool follow) {
  follow_ = follow;
  if (follow_) rescale();
}

void LivePlots::setWindow(int steps) {
  window_ = steps;
  redrawBreakdown();
  rescale();
}

QCustomPlot* LivePlots::chart(const std::string& name) const {
  if (name == "breakdown") return breakdown_;
  for (const auto& [n, p] : charts_)
    if (n == name) return p;
  return nullptr;
}

void LivePlots::setWorldSize(int ranks) {
  const bool bands = ranks > kBandsAboveRanks;
  if (bands == band_mode_) return;
  band_mode_ = bands;
  clear();  // a run's charts are all curves or all bands
}

void LivePlots::setRankName(BandHover::RankName name) {
  rank_name_ = std::move(name);
  for (const auto& [metric, plot] : charts_)
    if (rank_name_) BandHover::of(plot)->setRankName(rank_name_);
}

// Band mode keeps each step's value per rank (raw units: bytes for memory; a step read again
// replaces its value) and recomputes a step's band when one of its values changed.
void LivePlots::addBandValue(const std::string& metric, int rank, std::int64_t step, double value) {
  if (is_memory_metric(metric)) fitMemoryUnit(value);
  LiveBand& band = bands_[metric];
  band.values[step][rank] = value;
  band.dirty.insert(step);
}

void LivePlots::redrawBands() {
  for (auto& [metric, band] : bands_) {
    if (band.dirty.empty()) continue;
    for (std::int64_t step : band.dirty) {
      std::vector<sessions::RankValue> values;
      for (const auto& [rank, v] : band.values[step]) values.push_back({rank, v});
      if (!values.empty()) band.bands[step] = sessions::rank_band(step, values);
    }
    band.dirty.clear();
    QCustomPlot* plot = chart(metric);
    if (!band.graphs.max) band.graphs = add_band_graphs(plot, series_color(0), tr("ranks"));
    std::vector<sessions::RankBand> ordered;
    for (const auto& [step, b] : band.bands) ordered.push_back(b);
    const bool memory = is_memory_metric(metric);
    const double scale = memory ? 1 / memory_unit_.divisor : 1;
    set_band_points(band.graphs, ordered, scale);
    BandHover* hover = BandHover::of(plot);
    hover->clear();
    const auto* bands = &band.bands;
    hover->addBand(tr("ranks"), [bands](std::int64_t s) -> std::optional<sessions::RankBand> {
      const auto it = bands->find(s);
      return it == bands->end() ? std::nullopt : std::optional<sessions::RankBand>(it->second);
    }, memory ? memory_unit_.name : QString(), scale, slowest_end(metric == "tokens_per_s" ? throughput_metric_ : metric));
  }
}

void LivePlots::focusRank(int rank, std::int64_t step) {
  follow_ = false;
  focused_rank_ = rank;
  const double at = step >= 0 ? double(step) : double(std::max<std::int64_t>(0, last_step_));
  for (QCustomPlot* plot : allPlots()) {
    plot->xAxis->setRange(std::max(0.0, at - 20), at + 5);
    for (int g = 0; !band_mode_ && plot != breakdown_ && g < plot->graphCount(); ++g) {
      QColor color = series_color(static_cast<std::size_t>(g));
      if (g != rank) color.setAlpha(50);
      plot->graph(g)->setPen(QPen(color, g == rank ? 3.0 : 1.0));
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

std::optional<sessions::RankBand> LivePlots::bandAt(const std::string& metric, std::int64_t step) const {
  const auto band = bands_.find(metric);
  if (band == bands_.end()) return std::nullopt;
  const auto it = band->second.bands.find(step);
  return it == band->second.bands.end() ? std::nullopt : std::optional<sessions::RankBand>(it->second);
}

int LivePlots::pointCount(const std::string& metric, int rank) const {
  QCustomPlot* plot = chart(metric);
  return plot && rank < plot->graphCount() ? plot->graph(rank)->dataCount() : 0;
}

std::optional<double> LivePlots::recentStepMs() const {
  std::vector<double> recent;
  for (auto it = step_ms_.rbegin(); it != step_ms_.rend() && recent.size() < 20; ++it) recent.push_back(it->second);
  if (recent.empty()) return std::nullopt;
  std::nth_element(recent.begin(), recent.begin() + recent.size() / 2, recent.end());
  return recent[recent.size() / 2];
}

}  // namespace shardscope::gui
