// ProfileTimeline's summary lanes: the ranks without lanes of their own, reduced per bucket
// (profile_rank_summary.hpp).

#include <algorithm>

#include <QPainter>
#include <QPainterPath>

#include "app/gui/profile/profile_timeline.hpp"

namespace shardscope::gui {
namespace {

QString percent(double fraction) { return QString::number(100 * fraction, 'f', 0) + " %"; }

QColor lane_color(int lane) { return lane == 0 ? QColor(31, 119, 180) : QColor(214, 39, 40); }

}  // namespace

int ProfileTimeline::bucketAt(int x) const {
  const auto& s = last_summary_;
  if (x < kLabelWidth || s.kernels.min.empty()) return -1;
  const auto bucket = static_cast<std::int64_t>((timeAt(x) - double(s.start_ns)) / double(s.bucket_ns));
  return bucket >= 0 && bucket < std::int64_t(s.kernels.min.size()) ? int(bucket) : -1;
}

// The band from min to max busy fraction, light, and the median over it as a line: a bucket where
// the band reaches down alone is one rank (or a few) idle while the rest work.
void ProfileTimeline::paintSummary(QPainter& painter, int lane, int top) {
  const BusyBand& band = lane == 0 ? last_summary_.kernels : last_summary_.collectives;
  painter.setPen(palette().text().color());
  painter.drawText(QRect(4, top, kLabelWidth - 8, kCounterHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   tr("%1 other ranks \u00b7 %2\nbusy: min \u2013 median \u2013 max")
                       .arg(last_summary_.ranks)
                       .arg(lane == 0 ? tr("kernels") : tr("NCCL")));
  painter.save();
  painter.setClipRect(QRect(kLabelWidth, top, width() - kLabelWidth, kCounterHeight));
  auto y_of = [&](double f) { return top + kCounterHeight - 3 - (kCounterHeight - 7) * f; };
  // Faint guides at 100 % and 0 %: a band pinned to either reads at a glance.
  painter.setPen(QPen(palette().mid().color(), 1, Qt::DotLine));
  painter.drawLine(QPointF(kLabelWidth, y_of(1)), QPointF(width(), y_of(1)));
  painter.drawLine(QPointF(kLabelWidth, y_of(0)), QPointF(width(), y_of(0)));
  QColor light = lane_color(lane);
  light.setAlpha(70);
  QPainterPath median;
  for (std::size_t b = 0; b < band.min.size(); ++b) {
    const double t = double(last_summary_.start_ns + std::int64_t(b) * last_summary_.bucket_ns);
    const double x0 = xOf(t), x1 = xOf(t + double(last_summary_.bucket_ns));
    painter.fillRect(QRectF(x0, y_of(band.max[b]), x1 - x0, std::max(1.0, y_of(band.min[b]) - y_of(band.max[b]))), light);
    if (b == 0) median.moveTo(x0, y_of(band.median[b]));
    else median.lineTo(x0, y_of(band.median[b]));
    median.lineTo(x1, y_of(band.median[b]));
  }
  painter.setPen(QPen(lane_color(lane), 1.5));
  painter.drawPath(median);
  painter.restore();
}

QString ProfileTimeline::describeSummary(int lane, int x) const {
  const int bucket = bucketAt(x);
  if (bucket < 0 || lane < 0 || lane >= summaryLanes()) return {};
  const BusyBand& band = lane == 0 ? last_summary_.kernels : last_summary_.collectives;
  const auto b = std::size_t(bucket);
  const std::int64_t start = last_summary_.start_ns + bucket * last_summary_.bucket_ns - data_->origin_ns;
  const QString click = band.outlier(b) < 0 ? QString()
                                            : tr("<br><i>click: add rank %1's lanes (the farthest from the median)</i>")
                                                  .arg(band.outlier(b));
  return tr("<b>%1 other ranks, busy in %2</b><br>+%3 for %4<br>min %5 (rank %6)<br>median %7<br>max %8 (rank %9)%10")
      .arg(last_summary_.ranks)
      .arg(lane == 0 ? tr("kernels (compute, memcpy, memset)") : tr("NCCL collectives"))
      .arg(QString::fromStdString(format_duration_ns(double(start))),
           QString::fromStdString(format_duration_ns(double(last_summary_.bucket_ns))), percent(band.min[b]))
      .arg(band.min_rank[b])
      .arg(percent(band.median[b]), percent(band.max[b]))
      .arg(band.max_rank[b])
      .arg(click);
}

}  // namespace shardscope::gui
