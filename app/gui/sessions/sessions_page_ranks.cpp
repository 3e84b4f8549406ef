// The Sessions & Compare page for many-rank sessions: each such session's band across ranks under
// its (median) curve, hovering names the ranks at the band's ends; and the Heat map tab, a rank x
// step map of the first compared session's per-rank series (rank_heat_map.hpp).
#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "app/gui/common/rank_band_chart.hpp"
#include "app/gui/common/rank_heat_map.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/sessions/sessions_page.hpp"

namespace shardscope::gui {
namespace {

QString metric_unit(const std::string& metric, const ByteUnit& memory) {
  if (metric == "step_time_ms") return "ms";
  if (metric == "tokens_per_s") return "tokens/s";
  if (metric == "samples_per_s") return "samples/s";
  if (metric == "tflops") return "TFLOP/s";
  return is_memory_metric(metric) ? memory.name : QString();
}

// The value axis reaches the bands' ends too (it was fitted to the median curves).
void fit_bands(QCustomPlot* plot, double low, double high) {
  if (!(high >= low) || plot->yAxis->scaleType() == QCPAxis::stLogarithmic) return;
  const QCPRange shown = plot->yAxis->range();
  const double pad = 0.05 * std::max(high - low, 1e-9 * std::abs(high));
  plot->yAxis->setRange(std::min(shown.lower, low - pad), std::max(shown.upper, high + pad));
}

}  // namespace

void SessionsPage::drawBands(const PlotCurve& curve, QCustomPlot* plot) {
  BandHover* hover = BandHover::of(plot);
  hover->clear();
  const ByteUnit unit = is_memory_metric(curve.metric) ? byte_unit_for(largest_value(curve)) : ByteUnit{};
  const double scale = 1 / unit.divisor;
  double low = INFINITY, high = -INFINITY;
  for (std::size_t s = 0; s < comparison_.bands.size() && s < comparison_.sessions.size(); ++s) {
    const auto it = comparison_.bands[s].by_metric.find(curve.metric);
    if (it == comparison_.bands[s].by_metric.end() || it->second->empty()) continue;
    const QString label = QString::fromStdString(comparison_.sessions[s].label);
    BandGraphs graphs = add_band_graphs(plot, series_color(s), label, false);
    set_band_points(graphs, *it->second, scale);
    for (const auto& b : *it->second) low = std::min(low, b.min * scale), high = std::max(high, b.max * scale);
    const auto hosts = comparison_.bands[s].hosts;
    hover->addBand(label, band_lookup(it->second), metric_unit(curve.metric, unit), scale, slowest_end(curve.metric),
                   [hosts](int rank) {
                     const auto host = hosts.find(rank);
                     return host == hosts.end() ? QObject::tr("rank %1").arg(rank)
                                                : QString("%1:%2").arg(QString::fromStdString(host->second)).arg(rank);
                   });
  }
  if (low <= high) {
    fit_bands(plot, low, high);
    plot->replot();
  }
}

QWidget* SessionsPage::buildHeatMapTab() {
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  heat_map_label_ = new QLabel(tr("Compare a session to see its ranks here."));
  heat_map_label_->setWordWrap(true);
  heat_map_ = new RankHeatMap;
  layout->addWidget(heat_map_label_);
  layout->addWidget(heat_map_, 1);
  return tab;
}

// The first compared session, read when the tab is looked at (a large session's grid is one pass
// over its rows: not worth it for a comparison nobody opens the map of).
void SessionsPage::showHeatMap() {
  if (comparison_.sessions.empty() || !heat_map_stale_) return;
  heat_map_stale_ = false;
  const SessionRef& first = comparison_.sessions.front();
  const int ranks = comparison_.bands.empty() ? 0 : comparison_.bands.front().ranks;
  heat_map_label_->setText(tr("%1: %2 ranks%3").arg(QString::fromStdString(first.label).toHtmlEscaped()).arg(ranks)
                               .arg(comparison_.sessions.size() > 1 ? tr(" (the first compared session)") : QString()));
  heat_map_->setSession(QString::fromStdString(first.file), first.id);
}

}  // namespace shardscope::gui
