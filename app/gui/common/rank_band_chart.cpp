#include "app/gui/common/rank_band_chart.hpp"

#include <algorithm>

#include <QToolTip>
#include <qcustomplot.h>

namespace shardscope::gui {
namespace {

QString number(double v) { return QString::number(v, 'g', 4); }

}  // namespace

BandGraphs add_band_graphs(QCustomPlot* plot, const QColor& color, const QString& name, bool with_median) {
  BandGraphs g;
  QColor edge = color, fill = color;
  edge.setAlpha(90);
  fill.setAlpha(45);
  g.min = plot->addGraph();
  g.min->setPen(QPen(edge, 1));
  g.min->removeFromLegend();
  g.max = plot->addGraph();
  g.max->setPen(QPen(edge, 1));
  g.max->setBrush(fill);
  g.max->setChannelFillGraph(g.min);  // the band: max filled down to min
  g.max->setName(name + QObject::tr(" (min-max)"));
  if (!with_median) return g;
  g.median = plot->addGraph();
  g.median->setPen(QPen(color, 1.8));
  g.median->setName(name + QObject::tr(" (median)"));
  return g;
}

void set_band_points(const BandGraphs& graphs, const std::vector<sessions::RankBand>& bands, double scale) {
  QVector<double> steps, low, middle, high;
  steps.reserve(static_cast<int>(bands.size()));
  for (const auto& b : bands) {
    steps << double(b.step);
    low << b.min * scale;
    middle << b.median * scale;
    high << b.max * scale;
  }
  graphs.min->setData(steps, low, true);
  if (graphs.median) graphs.median->setData(steps, middle, true);
  graphs.max->setData(steps, high, true);
}

BandHover::BandHover(QCustomPlot* plot) : QObject(plot), plot_(plot) {
  setObjectName("BandHover");
  plot->setMouseTracking(true);
  connect(plot, &QCustomPlot::mouseMove, this, &BandHover::onMouseMove);
  rank_name_ = [](int rank) { return tr("rank %1").arg(rank); };
}

BandHover* BandHover::of(QCustomPlot* plot) {
  if (auto* hover = plot->findChild<BandHover*>("BandHover", Qt::FindDirectChildrenOnly)) return hover;
  return new BandHover(plot);
}

void BandHover::clear() { bands_.clear(); }

void BandHover::addBand(const QString& name, Lookup lookup, const QString& unit, double scale, Slowest slowest,
                        RankName rank_name) {
  bands_.push_back({name, std::move(lookup), unit, scale, slowest, std::move(rank_name)});
}

QString BandHover::text(std::int64_t step) const {
  QStringList lines;
  for (const auto& band : bands_) {
    const auto b = band.lookup(step);
    if (!b) continue;
    const RankName& rank_name = band.rank_name ? band.rank_name : rank_name_;
    const QString unit = band.unit.isEmpty() ? QString() : " " + band.unit;
    const QString slow_max = band.slowest == Slowest::kMax ? tr(", slowest") : QString();
    const QString slow_min = band.slowest == Slowest::kMin ? tr(", slowest") : QString();
    lines << tr("%1, step %2 (%3 ranks): max %4%5 (%6%7) \u00b7 median %8%5 \u00b7 min %9%5 (%10%11)")
                 .arg(band.name)
                 .arg(step)
                 .arg(b->ranks)
                 .arg(number(b->max * band.scale), unit, rank_name(b->max_rank), slow_max)
                 .arg(number(b->median * band.scale), number(b->min * band.scale), rank_name(b->min_rank), slow_min);
  }
  return lines.join('\n');
}

void BandHover::onMouseMove(QMouseEvent* event) {
  if (bands_.empty()) return;
  const double x = plot_->xAxis->pixelToCoord(event->position().x());
  const QString shown = text(static_cast<std::int64_t>(std::llround(x)));
  if (shown.isEmpty()) return QToolTip::hideText();
  QToolTip::showText(event->globalPosition().toPoint(), shown, plot_);
}

BandHover::Lookup band_lookup(std::shared_ptr<const std::vector<sessions::RankBand>> bands) {
  return [bands](std::int64_t step) -> std::optional<sessions::RankBand> {
    const auto it = std::lower_bound(bands->begin(), bands->end(), step,
                                     [](const sessions::RankBand& b, std::int64_t s) { return b.step < s; });
    if (it == bands->end() || it->step != step) return std::nullopt;
    return *it;
  };
}

BandHover::Slowest slowest_end(const std::string& metric) {
  if (metric == "step_time_ms" || metric.rfind("timer:", 0) == 0 || metric.rfind("comm:", 0) == 0)
    return BandHover::Slowest::kMax;
  if (metric == "tokens_per_s" || metric == "samples_per_s" || metric == "tflops") return BandHover::Slowest::kMin;
  return BandHover::Slowest::kNone;
}

}  // namespace shardscope::gui
