#include "app/gui/profile/profile_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

namespace shardscope::gui {
namespace {

const char* kind_name(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::kKernel: return "kernel";
    case TimelineKind::kCollective: return "collective (NCCL kernel)";
    case TimelineKind::kMemcpy: return "memcpy";
    case TimelineKind::kMemset: return "memset";
    case TimelineKind::kNvtx: return "NVTX range";
    case TimelineKind::kStep: return "step (from its end time less its step time)";
    case TimelineKind::kPhase: return "timer (wall_clock_breakdown), laid out from the step's start";
  }
  return "";
}

// A "nice" tick spacing (1, 2 or 5 times a power of ten) giving about `wanted` ticks.
double tick_step(double span, int wanted) {
  const double raw = span / std::max(1, wanted);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

QString bytes_text(double bytes) {
  if (bytes >= double(1ull << 30)) return QString::number(bytes / double(1ull << 30), 'f', 2) + " GiB";
  return QString::number(bytes / double(1 << 20), 'f', 1) + " MiB";
}

}  // namespace

ProfileTimeline::ProfileTimeline(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::WheelFocus);
  setMinimumHeight(kRulerHeight + 4 * kRowHeight);
}

int ProfileTimeline::rowHeight(const TimelineRow& row) const {
  return row.kind == RowKind::kMemory ? kCounterHeight : kRowHeight;
}

void ProfileTimeline::setData(std::shared_ptr<const ProfileData> data) {
  data_ = std::move(data);
  selection_ = {};
  shown_ranks_.reset();
  if (data_ && data_->records && data_->records->ranks.size() > std::size_t(kFewRanks))
    shown_ranks_ = std::vector<int>{data_->records->ranks.front()};
  layoutLanes();
  resetZoom();
}

void ProfileTimeline::setShownRanks(std::optional<std::vector<int>> ranks) {
  shown_ranks_ = std::move(ranks);
  layoutLanes();
  update();
}

// The lanes: two summary lanes when some profiled rank has none of its own, then the rows of the
// shown ranks.
void ProfileTimeline::layoutLanes() {
  lanes_.clear();
  summary_.clear();
  auto shown = [this](int rank) {
    return !shown_ranks_ || std::binary_search(shown_ranks_->begin(), shown_ranks_->end(), rank);
  };
  if (shown_ranks_) std::sort(shown_ranks_->begin(), shown_ranks_->end());
  if (data_) {
    for (std::size_t i = 0; i < data_->rows.size(); ++i)
      if (shown(data_->rows[i].rank)) lanes_.push_back(static_cast<int>(i));
    for (const auto& busy : data_->busy)
      if (!shown(busy.rank)) summary_.push_back(&busy);
  }
  row_tops_.assign(1, kRulerHeight);
  for (int lane = 0; lane < summaryLanes(); ++lane) row_tops_.push_back(row_tops_.back() + kCounterHeight);
  for (const int row : lanes_) row_tops_.push_back(row_tops_.back() + rowHeight(data_->rows[std::size_t(row)]));
  setMinimumHeight(std::max(row_tops_.back(), kRulerHeight + 4 * kRowHeight) + 2);
  updateGeometry();
}

const TimelineRow* ProfileTimeline::laneRow(int lane) const {
  if (!data_ || lane < summaryLanes() || lane >= laneCount()) return nullptr;
  return &data_->rows[std::size_t(lanes_[std::size_t(lane - summaryLanes())])];
}

std::vector<int> ProfileTimeline::summaryRanks() const {
  std::vector<int> out;
  for (const RankBusy* busy : summary_) out.push_back(busy->rank);
  return out;
}

void ProfileTimeline::setSelection(const profiler::ProfileSelection& selection) {
  selection_ = selection;
  update();
}

int ProfileTimeline::rowAt(int y) const {
  const auto it = std::upper_bound(row_tops_.begin(), row_tops_.end(), y);
  const auto index = static_cast<int>(it - row_tops_.begin()) - 1;
  return index >= 0 && index + 1 < static_cast<int>(row_tops_.size()) ? index : -1;
}

int ProfileTimeline::rowTop(int index) const { return row_tops_.at(static_cast<std::size_t>(index)); }

QSize ProfileTimeline::sizeHint() const { return {900, minimumHeight()}; }

void ProfileTimeline::resetZoom() {
  if (!data_ || data_->rows.empty()) {
    setViewRange(0, 1);
    return;
  }
  const double start = double(data_->window_start_ns), end = double(data_->window_end_ns);
  const double pad = std::max(1.0, 0.01 * (end - start));
  setViewRange(start - pad, end + pad);
}

void ProfileTimeline::setViewRange(double start_ns, double end_ns) {
  if (!(end_ns > start_ns)) end_ns = start_ns + 1;
  // Below 100 ns per view nothing more can be told apart; stop zooming there.
  if (end_ns - start_ns < 100) {
    const double mid = (start_ns + end_ns) / 2;
    start_ns = mid - 50;
    end_ns = mid + 50;
  }
  view_start_ = start_ns;
  view_end_ = end_ns;
  update();
  emit viewChanged(view_start_, view_end_);
}

double ProfileTimeline::xOf(double ns) const {
  const double w = std::max(1, width() - kLabelWidth);
  return kLabelWidth + (ns - view_start_) / (view_end_ - view_start_) * w;
}

double ProfileTimeline::timeAt(double x) const {
  const double w = std::max(1, width() - kLabelWidth);
  return view_start_ + (x - kLabelWidth) / w * (view_end_ - view_start_);
}

void ProfileTimeline::zoom(double factor, int anchor_x) {
  const double anchor = timeAt(std::max(anchor_x, kLabelWidth));
  setViewRange(anchor - (anchor - view_start_) / factor, anchor + (view_end_ - anchor) / factor);
}

QColor ProfileTimeline::colorOf(const TimelineItem& item) const {
  switch (item.kind) {
    case TimelineKind::kCollective: return QColor(214, 39, 40);
    case TimelineKind::kMemcpy: return QColor(44, 160, 44);
    case TimelineKind::kMemset: return QColor(127, 127, 127);
    case TimelineKind::kNvtx: return QColor::fromHsv(static_cast<int>(260 + (item.name * 37) % 60), 90, 210);
    case TimelineKind::kStep: return QColor(120, 130, 150);
    case TimelineKind::kPhase: return QColor::fromHsv(static_cast<int>(20 + (item.name * 53) % 80), 140, 220);
    case TimelineKind::kKernel: break;
  }
  // Kernels in blues and teals by name, so repeated kernels read as a pattern.
  return QColor::fromHsv(static_cast<int>(185 + (item.name * 47) % 50), 170, 200);
}

bool ProfileTimeline::selected(const TimelineItem& item) const {
  const std::string& name = data_->names[item.name];
  if (selection_.step && item.step != *selection_.step) return false;
  const bool activity = item.kind == TimelineKind::kKernel || item.kind == TimelineKind::kCollective ||
                        item.kind == TimelineKind::kMemcpy || item.kind == TimelineKind::kMemset;
  if (!selection_.kernel.empty() && !(activity && name == selection_.kernel)) return false;
  if (!selection_.collective.empty() && profiler::collective_of_kernel(name) != selection_.collective) return false;
  return true;
}

void ProfileTimeline::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  painted_boxes_ = painted_labels_ = 0;
  if (!data_ || data_->rows.empty()) {
    painter.drawText(rect(), Qt::AlignCenter,
                     data_ && !data_->error.empty() ? QString::fromStdString(data_->error)
                                                    : tr("Nothing to draw: this session has no step times, timers "
                                                         "or profiled window."));
    return;
  }
  paintRuler(painter);
  last_summary_ = {};
  if (summaryLanes()) {
    const int buckets = std::max(1, (width() - kLabelWidth + kSummaryBucketPx - 1) / kSummaryBucketPx);
    last_summary_ = summarize_busy(summary_, static_cast<std::int64_t>(std::floor(view_start_)),
                                   static_cast<std::int64_t>(std::ceil(view_end_)), buckets);
  }
  for (int lane = 0; lane < laneCount(); ++lane) {
    const int top = row_tops_[std::size_t(lane)];
    if (lane % 2) painter.fillRect(QRect(0, top, width(), row_tops_[std::size_t(lane) + 1] - top), palette().alternateBase());
    const TimelineRow* row = laneRow(lane);
    if (!row) paintSummary(painter, lane, top);
    else if (row->kind == RowKind::kMemory) paintCounter(painter, *row, top);
    else paintRow(painter, *row, top);
  }
  paintSelection(painter);  // over the rows, translucent
  painter.setPen(palette().mid().color());
  painter.drawLine(kLabelWidth - 1, 0, kLabelWidth - 1, height());
  if (range_drag_ && drag_from_) {
    const int a = std::min(drag_from_->x(), range_drag_x_), b = std::max(drag_from_->x(), range_drag_x_);
    painter.fillRect(QRect(a, 0, b - a, height()), QColor(255, 200, 0, 60));
  }
}

void ProfileTimeline::paintSelection(QPainter& painter) {
  if (!selection_.time_range_ns) return;
  const double a = xOf(double(selection_.time_range_ns->first)), b = xOf(double(selection_.time_range_ns->second));
  painter.fillRect(QRectF(std::max<double>(a, kLabelWidth), 0, std::max(1.0, b - std::max<double>(a, kLabelWidth)), height()),
                   QColor(255, 200, 0, 45));
}

void ProfileTimeline::paintRuler(QPainter& painter) {
  const double origin = static_cast<double>(data_->origin_ns);
  const double step = tick_step(view_end_ - view_start_, std::max(2, (width() - kLabelWidth) / 110));
  painter.setPen(palette().text().color());
  painter.drawText(QRect(4, 0, kLabelWidth - 8, kRulerHeight), Qt::AlignVCenter, tr("time from the first record"));
  for (double t = std::ceil((view_start_ - origin) / step) * step; origin + t <= view_end_; t += step) {
    const int x = static_cast<int>(xOf(origin + t));
    painter.setPen(palette().mid().color());
    painter.drawLine(x, kRulerHeight - 6, x, height());
    painter.setPen(palette().text().color());
    painter.drawText(x + 3, kRulerHeight - 7, QString::fromStdString(format_duration_ns(t)));
  }
}

void ProfileTimeline::paintRow(QPainter& painter, const TimelineRow& row, int top) {
  painter.setPen(palette().text().color());
  painter.drawText(QRect(4, top, kLabelWidth - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   QString::fromStdString(row.label));
  painter.save();
  painter.setClipRect(QRect(kLabelWidth, top, width() - kLabelWidth, kRowHeight));
  const auto first = std::lower_bound(row.items.begin(), row.items.end(), view_start_ - double(row.longest_ns),
                                      [](const TimelineItem& item, double t) { return double(item.start_ns) < t; });
  const bool filtering = !selection_.empty() && !selection_.time_range_ns;
  int last_pixel = -1;
  for (auto it = first; it != row.items.end() && double(it->start_ns) <= view_end_; ++it) {
    if (double(it->end_ns) < view_start_) continue;
    const double x0 = xOf(double(it->start_ns)), x1 = xOf(double(it->end_ns));
    // Boxes narrower than a pixel that land on an already painted pixel add nothing visible.
    if (x1 - x0 < 1 && static_cast<int>(x0) == last_pixel) continue;
    last_pixel = static_cast<int>(x1);
    const QRectF box(x0, top + 2, std::max(1.0, x1 - x0), kRowHeight - 4);
    QColor color = colorOf(*it);
    if (filtering && !selected(*it)) color.setAlpha(45);  // what the selection leaves out stays faint
    painter.fillRect(box, color);
    ++painted_boxes_;
    const QRectF visible = box.intersected(QRectF(kLabelWidth, top, width() - kLabelWidth, kRowHeight));
    if (visible.width() > 40) {
      const std::string& name = data_->names[it->name];
      const bool kernel = it->kind == TimelineKind::kKernel || it->kind == TimelineKind::kCollective;
      painter.setPen(Qt::white);
      painter.drawText(visible.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       painter.fontMetrics().elidedText(QString::fromStdString(kernel ? short_kernel_name(name) : name),
                                                        Qt::ElideRight, static_cast<int>(visible.width()) - 5));
      ++painted_labels_;
    }
  }
  painter.restore();
}

void ProfileTimeline::paintCounter(QPainter& painter, const TimelineRow& row, int top) {
  painter.setPen(palette().text().color());
  painter.drawText(QRect(4, top, kLabelWidth - 8, kCounterHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   QString::fromStdString(row.label) + "\n" + tr("max %1").arg(bytes_text(row.counter_max)));
  if (row.counter.empty() || row.counter_max <= 0) return;
  painter.save();
  painter.setClipRect(QRect(kLabelWidth, top, width() - kLabelWidth, kCounterHeight));
  // A step line: each value holds from its step's end to the next one (Nsight's counter rows).
  auto y_of = [&](double v) { return top + kCounterHeight - 2 - (kCounterHeight - 6) * v / row.counter_max; };
  QPainterPath path;
  path.moveTo(kLabelWidth, top + kCounterHeight - 2);
  double previous = y_of(0);
  for (const auto& p : row.counter) {
    const double x = xOf(double(p.t_ns));
    path.lineTo(x, previous);
    previous = y_of(p.value);
    path.lineTo(x, previous);
  }
  path.lineTo(width(), previous);
  path.lineTo(width(), top + kCounterHeight - 2);
  painter.fillPath(path, QColor(70, 130, 180, 110));
  painter.setPen(QColor(40, 90, 150));
  painter.drawPath(path);
  painter.restore();
}

std::optional<std::pair<const TimelineRow*, const TimelineItem*>> ProfileTimeline::itemAt(const QPoint& pos) const {
  if (!data_ || pos.x() < kLabelWidth) return std::nullopt;
  const TimelineRow* lane = laneRow(rowAt(pos.y()));
  if (!lane) return std::nullopt;
  const TimelineRow& row = *lane;
  // Within 2 pixels, so a one-pixel kernel can still be hovered; the nearest start wins.
  const double slack = 2 * (view_end_ - view_start_) / std::max(1, width() - kLabelWidth);
  const double t = timeAt(pos.x());
  const TimelineItem* best = nullptr;
  auto it = std::lower_bound(row.items.begin(), row.items.end(), t - double(row.longest_ns) - slack,
                             [](const TimelineItem& item, double v) { return double(item.start_ns) < v; });
  for (; it != row.items.end() && double(it->start_ns) <= t + slack; ++it)
    if (double(it->end_ns) + slack >= t) best = &*it;
  if (!best) return std::nullopt;
  return std::make_pair(&row, best);
}

QString ProfileTimeline::describe(const TimelineItem& item) const {
  QString text = QString("<b>%1</b><br>%2, %3")
                     .arg(QString::fromStdString(data_->names[item.name]).toHtmlEscaped(), tr(kind_name(item.kind)),
                          QString::fromStdString(format_duration_ns(double(item.end_ns - item.start_ns))));
  if (item.bytes > 0) {
    const double gbps = double(item.bytes) / std::max<double>(1, double(item.end_ns - item.start_ns));
    text += tr("<br>%1 bytes (%2 GB/s)").arg(item.bytes).arg(gbps, 0, 'f', 2);
  }
  if (item.step >= 0) text += tr("<br>step %1").arg(item.step);
  text += tr("<br>starts at +%1").arg(QString::fromStdString(format_duration_ns(double(item.start_ns - data_->origin_ns))));
  text += tr("<br><i>click: select it; Shift+drag: select a time range</i>");
  return text;
}

bool ProfileTimeline::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int lane = rowAt(help->pos().y());
    const TimelineRow* row = laneRow(lane);
    if (auto hit = itemAt(help->pos())) {
      QToolTip::showText(help->globalPos(), describe(*hit->second), this);
    } else if (lane >= 0 && lane < summaryLanes()) {
      QToolTip::showText(help->globalPos(), describeSummary(lane, help->pos().x()), this);
    } else if (row && row->kind == RowKind::kMemory) {
      // The counter's value at the cursor: the last sample at or before it.
      const auto& counter = row->counter;
      const double t = timeAt(help->pos().x());
      auto it = std::upper_bound(counter.begin(), counter.end(), t, [](double v, const CounterPoint& p) { return v < double(p.t_ns); });
      if (it != counter.begin()) QToolTip::showText(help->globalPos(), tr("allocated %1").arg(bytes_text(std::prev(it)->value)), this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

void ProfileTimeline::wheelEvent(QWheelEvent* event) {
  const double notches = event->angleDelta().y() / 120.0;
  if (notches == 0) return;
  zoom(std::pow(1.25, notches), static_cast<int>(event->position().x()));
  event->accept();
}

void ProfileTimeline::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  drag_from_ = event->pos();
  drag_view_start_ = view_start_;
  range_drag_ = event->modifiers().testFlag(Qt::ShiftModifier);
  range_drag_x_ = event->pos().x();
  setCursor(range_drag_ ? Qt::IBeamCursor : Qt::ClosedHandCursor);
}

void ProfileTimeline::mouseMoveEvent(QMouseEvent* event) {
  if (!drag_from_) return;
  if (range_drag_) {
    range_drag_x_ = event->pos().x();
    update();
    return;
  }
  const double ns_per_px = (view_end_ - view_start_) / std::max(1, width() - kLabelWidth);
  const double start = drag_view_start_ - (event->pos().x() - drag_from_->x()) * ns_per_px;
  setViewRange(start, start + (view_end_ - view_start_));
}

void ProfileTimeline::mouseReleaseEvent(QMouseEvent* event) {
  const bool moved = drag_from_ && std::abs(event->pos().x() - drag_from_->x()) > 3;
  if (drag_from_ && range_drag_ && moved) {
    const double a = timeAt(std::min(drag_from_->x(), event->pos().x()));
    const double b = timeAt(std::max(drag_from_->x(), event->pos().x()));
    emit rangeSelected(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b));
  } else if (drag_from_ && !moved) {
    selectAt(event->pos());
  }
  drag_from_.reset();
  range_drag_ = false;
  unsetCursor();
  update();
}

void ProfileTimeline::selectAt(const QPoint& pos) {
  const int lane = rowAt(pos.y()), bucket = bucketAt(pos.x());
  if (lane >= 0 && lane < summaryLanes() && bucket >= 0) {
    const BusyBand& band = lane == 0 ? last_summary_.kernels : last_summary_.collectives;
    if (const int rank = band.outlier(std::size_t(bucket)); rank >= 0) emit rankPicked(rank);
    return;
  }
  const auto hit = itemAt(pos);
  if (!hit) return;
  const TimelineItem& item = *hit->second;
  const QString name = QString::fromStdString(data_->names[item.name]);
  switch (item.kind) {
    case TimelineKind::kStep:
    case TimelineKind::kPhase:
    case TimelineKind::kNvtx:
      if (item.step >= 0) emit stepSelected(item.step);
      return;
    case TimelineKind::kCollective:
      if (const auto op = profiler::collective_of_kernel(name.toStdString()); !op.empty()) {
        emit collectiveSelected(QString::fromStdString(op));
        return;
      }
      [[fallthrough]];
    case TimelineKind::kKernel:
    case TimelineKind::kMemcpy:
    case TimelineKind::kMemset:
      emit kernelSelected(name);
      return;
  }
}

void ProfileTimeline::mouseDoubleClickEvent(QMouseEvent*) { resetZoom(); }

}  // namespace shardscope::gui
