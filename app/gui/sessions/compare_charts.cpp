#include "app/gui/sessions/compare_charts.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"

namespace shardscope::gui {
namespace {

QVector<double> scaled(const std::vector<double>& v, double scale) {
  QVector<double> out(static_cast<int>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) out[static_cast<int>(i)] = v[i] * scale;
  return out;
}

/// The smallest and largest value drawn (positive ones only on a log axis).
std::optional<std::pair<double, double>> value_extent(const PlotCurve& curve, double scale, bool positive_only) {
  std::optional<std::pair<double, double>> extent;
  for (const auto* list : {&curve.raw, &curve.smoothed})
    for (const auto& series : *list)
      for (double y : series.y) {
        const double v = y * scale;
        if (!std::isfinite(v) || (positive_only && v <= 0)) continue;
        extent = extent ? std::make_pair(std::min(extent->first, v), std::max(extent->second, v)) : std::make_pair(v, v);
      }
  return extent;
}

}  // namespace

void fit_value_axis(QCustomPlot* plot, const PlotCurve& curve, double scale, bool log_scale) {
  QCPAxis* axis = plot->yAxis;
  const auto extent = value_extent(curve, scale, log_scale);
  axis->setScaleType(log_scale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (!extent) {  // nothing to draw: a plain 0..1 under the note, not a log axis's crammed "5 4 3 2 1"
    axis->setScaleType(QCPAxis::stLinear);
    axis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(axis));
    return axis->setRange(0, 1);
  }
  auto [lo, hi] = *extent;
  if (!log_scale && lo == 0.0 && hi == 0.0) return axis->setRange(0, 1);  // only zeros: not a band of 1e-12
  // A log ticker labels powers of ten; inside one decade it would print "6·10⁰" at every tick, so
  // there the ticks are plain numbers on the log scale. Below 1.6 decades QCustomPlot's log ticker
  // fell back to linear ticks, which "eb" at precision 0 printed as "2·10⁻³" twice: LogTicker puts
  // them at 1, 2 and 5 times the powers of ten, and ReadableTicker never lets a label repeat.
  const bool decades = log_scale && hi / lo >= 10;
  if (decades) {
    axis->setTicker(QSharedPointer<ReadableTicker<LogTicker>>::create(axis));
    axis->setNumberFormat("eb");
    axis->setNumberPrecision(0);
  } else {
    axis->setTicker(QSharedPointer<ReadableTicker<QCPAxisTicker>>::create(axis));
    axis->setNumberFormat("gb");
    axis->setNumberPrecision(4);
  }
  // Room above and below, so a flat curve (memory on the CPU) is drawn inside the frame, not on it.
  if (log_scale) {
    const double factor = std::max(1.02, std::pow(hi / lo, 0.06));
    axis->setRange(lo / factor, hi * factor);
  } else {
    const double pad = std::max({0.06 * (hi - lo), 0.02 * std::max(std::abs(hi), std::abs(lo)), 1e-12});
    axis->setRange(lo - pad, hi + pad);
  }
}


QColor series_color(std::size_t index) {
  static const QColor kPalette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
                                    QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75),
                                    QColor(227, 119, 194), QColor(127, 127, 127)};
  return kPalette[index % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

QString metric_title(const std::string& metric, const QString& memory_unit) {
  static const std::map<std::string, const char*> kTitles = {
      {"loss", "loss"},
      {"lr", "learning rate"},
      {"loss_scale", "loss scale"},
      {"grad_norm", "grad norm"},
      {"step_time_ms", "step time (ms)"},
      {"samples_per_s", "samples/s"},
      {"tokens_per_s", "tokens/s"},
      {"tflops", "TFLOP/s per GPU"},
      {"mem_allocated", "memory allocated (%1)"},
      {"mem_reserved", "memory reserved (%1)"},
      {"mem_peak", "memory peak (%1)"}};
  if (auto it = kTitles.find(metric); it != kTitles.end())
    return is_memory_metric(metric) ? QObject::tr(it->second).arg(memory_unit) : QObject::tr(it->second);
  if (metric.rfind("timer:", 0) == 0) return QObject::tr("%1 (ms)").arg(QString::fromStdString(metric.substr(6)));
  return QString::fromStdString(metric);
}

bool is_memory_metric(const std::string& metric) { return metric.rfind("mem_", 0) == 0; }

ByteUnit byte_unit_for(double largest_bytes) {
  static const ByteUnit kUnits[] = {{double(1ull << 30), "GiB"}, {double(1 << 20), "MiB"}, {1024.0, "KiB"}};
  for (const ByteUnit& unit : kUnits)
    if (largest_bytes >= unit.divisor) return unit;
  return ByteUnit{};
}

double largest_value(const PlotCurve& curve) {
  double largest = 0;
  for (const auto& series : curve.raw)
    for (double y : series.y)
      if (std::isfinite(y)) largest = std::max(largest, std::abs(y));
  return largest;
}

void fit_step_axis(QCustomPlot* plot, const PlotCurve& curve) {
  std::optional<std::pair<double, double>> steps;
  for (const auto& series : curve.raw)
    if (!series.x.empty())
      steps = steps ? std::make_pair(std::min(steps->first, series.x.front()), std::max(steps->second, series.x.back()))
                    : std::make_pair(series.x.front(), series.x.back());
  if (!steps) return plot->xAxis->setRange(0, 1);
  auto [first, last] = *steps;
  // One step (a DeepSpeed run's single TFLOP/s figure) sits in the middle of a few steps around it,
  // never at steps below 0; a longer curve spans exactly its steps.
  if (last - first < 2) {
    const double span = last - first;
    first = first >= 1 ? first - 1 : first - 0.5;  // step 0's dot whole inside the frame, no tick below 0
    last = first + std::max(2.0, span + 2);
  }
  plot->xAxis->setRange(first, last);
}

namespace {

// A dot per step while a curve is short, as the live charts do: a single point (a DeepSpeed run's
// one TFLOP/s figure at profile_step) is no line at all.
void show_dots_while_short(QCPGraph* graph) {
  constexpr int kDotsUpTo = 30;
  if (graph->dataCount() <= kDotsUpTo) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
}

QCPItemText* chart_note(QCustomPlot* plot, const QString& text, double y, Qt::Alignment alignment) {
  auto* note = new QCPItemText(plot);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setCoords(0.5, y);
  note->setPositionAlignment(alignment);
  note->setTextAlignment(Qt::AlignCenter);
  note->setText(text);
  note->setColor(Qt::gray);
  note->setFont(QFont(plot->font().family(), 7));
  return note;
}

}  // namespace

void draw_compare_curve(QCustomPlot* plot, const PlotCurve& curve, const std::vector<SessionRef>& sessions,
                        const CurveStyle& style) {
  plot->clearGraphs();
  plot->clearItems();
  const ByteUnit unit = is_memory_metric(curve.metric) ? byte_unit_for(largest_value(curve)) : ByteUnit{};
  const double scale = 1 / unit.divisor;
  bool any = false;  // a value worth drawing: a curve of zeros or NaNs (a CPU run's TFLOP/s) is none
  for (const auto& series : curve.raw)
    for (double y : series.y) any = any || (std::isfinite(y) && y != 0.0);
  // fp32 and bf16 runs have no loss scale, CPU runs no TFLOP/s peak: say so instead of an empty box.
  if (!any) chart_note(plot, QObject::tr("not recorded in these sessions"), 0.5, Qt::AlignCenter);
  if (!curve.note.empty()) chart_note(plot, QString::fromStdString(curve.note), 0.02, Qt::AlignTop | Qt::AlignHCenter);
  for (std::size_t s = 0; s < curve.raw.size(); ++s) {
    const QColor color = series_color(s);
    const bool smoothed = s < curve.smoothed.size() && !curve.smoothed[s].x.empty();
    if (!smoothed || style.show_raw) {
      auto* raw = plot->addGraph();
      QColor faint = color;
      if (smoothed) faint.setAlpha(60);
      raw->setPen(QPen(faint, smoothed ? 1 : 1.6));
      raw->setData(scaled(curve.raw[s].x, 1), scaled(curve.raw[s].y, scale), true);
      raw->setName(QString::fromStdString(sessions[s].label));
      if (smoothed) raw->removeFromLegend();
      else show_dots_while_short(raw);
    }
    if (smoothed) {
      auto* line = plot->addGraph();
      line->setPen(QPen(color, 1.8));
      line->setData(scaled(curve.smoothed[s].x, 1), scaled(curve.smoothed[s].y, scale), true);
      line->setName(QString::fromStdString(sessions[s].label));
      show_dots_while_short(line);
    }
  }
  plot->xAxis->setLabel(QObject::tr("step"));
  plot->yAxis->setLabel(metric_title(curve.metric, unit.name));
  fit_step_axis(plot, curve);
  fit_value_axis(plot, curve, scale, style.log_scale);
  // The page's header names the colours; an exported chart shows this legend (gui_export.hpp).
  plot->legend->setVisible(false);
  plot->legend->setFont(QFont(plot->font().family(), 8));
  plot->replot();
}

void draw_timer_breakdown(QCustomPlot* plot, const std::vector<sessions::SessionSummary>& summaries,
                          const std::vector<SessionRef>& sessions) {
  plot->clearPlottables();
  std::vector<std::string> names;
  for (const auto& s : summaries)
    for (const auto& t : s.timers)
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (std::size_t i = 0; i < names.size(); ++i) ticker->addTick(static_cast<double>(i + 1), QString::fromStdString(names[i]));
  const double width = 0.8 / std::max<std::size_t>(1, summaries.size());
  double highest = 1;
  for (std::size_t s = 0; s < summaries.size(); ++s) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(QString::fromStdString(sessions[s].label));
    bars->setPen(Qt::NoPen);
    bars->setBrush(series_color(s));
    bars->setWidth(width);
    QVector<double> keys, values;
    for (std::size_t i = 0; i < names.size(); ++i) {
      for (const auto& t : summaries[s].timers)
        if (t.name == names[i]) {
          keys << static_cast<double>(i + 1) - 0.4 + width * (static_cast<double>(s) + 0.5);
          values << t.median_ms;
          highest = std::max(highest, t.median_ms);
        }
    }
    bars->setData(keys, values, true);
  }
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setTickLabelRotation(30);
  plot->xAxis->setRange(0.4, static_cast<double>(names.size()) + 0.6);
  plot->yAxis->setLabel(QObject::tr("median per step (ms, slowest rank)"));
  plot->yAxis->setRange(0, highest * 1.15);
  plot->legend->setVisible(!summaries.empty());
  plot->legend->setFont(QFont(plot->font().family(), 8));
  place_legend_below(plot, 4);
  plot->replot();
}

void place_legend_below(QCustomPlot* plot, int per_row) {
  QCPLegend* legend = plot->legend;
  if (legend->layout() != plot->plotLayout()) {  // inside the axes (QCustomPlot's place), or in no layout
    if (legend->layout() == plot->axisRect()->insetLayout()) {
      plot->axisRect()->insetLayout()->take(legend);
      plot->axisRect()->insetLayout()->simplify();
    }
    plot->plotLayout()->addElement(plot->plotLayout()->rowCount(), 0, legend);
    plot->plotLayout()->setRowStretchFactor(plot->plotLayout()->rowCount() - 1, 0.001);
  }
  legend->setWrap(per_row);
  legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-lays the entries out at the new wrap
  legend->setMargins(QMargins(4, 2, 4, 2));
  legend->setRowSpacing(0);
  legend->setColumnSpacing(8);
}

}  // namespace shardscope::gui
