#include "app/gui/profile_timeline.hpp"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QPainter>
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

}  // namespace

ProfileTimeline::ProfileTimeline(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::WheelFocus);
  setMinimumHeight(kRulerHeight + 4 * kRowHeight);
}

void ProfileTimeline::setData(std::shared_ptr<const ProfileData> data) {
  data_ = std::move(data);
  setMinimumHeight(kRulerHeight + std::max<int>(4, data_ ? static_cast<int>(data_->rows.size()) : 0) * kRowHeight + 2);
  resetZoom();
  updateGeometry();
}

QSize ProfileTimeline::sizeHint() const { return {900, minimumHeight()}; }

void ProfileTimeline::resetZoom() {
  if (!data_ || data_->items == 0) {
    setViewRange(0, 1);
    return;
  }
  const double pad = std::max<double>(1, 0.01 * static_cast<double>(data_->end_ns - data_->start_ns));
  setViewRange(static_cast<double>(data_->start_ns) - pad, static_cast<double>(data_->end_ns) + pad);
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
    case TimelineKind::kKernel: break;
  }
  // Kernels in blues and teals by name, so repeated kernels read as a pattern.
  return QColor::fromHsv(static_cast<int>(185 + (item.name * 47) % 50), 170, 200);
}

void ProfileTimeline::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  painted_boxes_ = 0;
  if (!data_ || data_->rows.empty()) {
    painter.drawText(rect(), Qt::AlignCenter,
                     data_ && !data_->error.empty() ? QString::fromStdString(data_->error)
                                                    : tr("No profiled window in this session (no kernel, memcpy "
                                                         "or NVTX records)."));
    return;
  }
  paintRuler(painter);
  int top = kRulerHeight;
  for (std::size_t i = 0; i < data_->rows.size(); ++i, top += kRowHeight) {
    if (i % 2) painter.fillRect(QRect(0, top, width(), kRowHeight), palette().alternateBase());
    paintRow(painter, data_->rows[i], top);
  }
  painter.setPen(palette().mid().color());
  painter.drawLine(kLabelWidth - 1, 0, kLabelWidth - 1, height());
}

void ProfileTimeline::paintRuler(QPainter& painter) {
  const double origin = static_cast<double>(data_->start_ns);
  const double span = view_end_ - view_start_;
  const double step = tick_step(span, std::max(2, (width() - kLabelWidth) / 110));
  painter.setPen(palette().text().color());
  painter.drawText(QRect(4, 0, kLabelWidth - 8, kRulerHeight), Qt::AlignVCenter, tr("time from window start"));
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
  int last_pixel = -1;
  for (auto it = first; it != row.items.end() && double(it->start_ns) <= view_end_; ++it) {
    if (double(it->end_ns) < view_start_) continue;
    const double x0 = xOf(double(it->start_ns)), x1 = xOf(double(it->end_ns));
    // Boxes narrower than a pixel that land on an already painted pixel add nothing visible.
    if (x1 - x0 < 1 && static_cast<int>(x0) == last_pixel) continue;
    last_pixel = static_cast<int>(x1);
    const QRectF box(x0, top + 2, std::max(1.0, x1 - x0), kRowHeight - 4);
    painter.fillRect(box, colorOf(*it));
    ++painted_boxes_;
    if (box.width() > 40) {
      painter.setPen(Qt::white);
      painter.drawText(box.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       painter.fontMetrics().elidedText(QString::fromStdString(data_->names[it->name]), Qt::ElideRight,
                                                        static_cast<int>(box.width()) - 5));
    }
  }
  painter.restore();
}

std::optional<std::pair<const TimelineRow*, const TimelineItem*>> ProfileTimeline::itemAt(const QPoint& pos) const {
  if (!data_ || pos.x() < kLabelWidth || pos.y() < kRulerHeight) return std::nullopt;
  const auto index = static_cast<std::size_t>((pos.y() - kRulerHeight) / kRowHeight);
  if (index >= data_->rows.size()) return std::nullopt;
  const TimelineRow& row = data_->rows[index];
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
  text += tr("<br>starts at +%1").arg(QString::fromStdString(format_duration_ns(double(item.start_ns - data_->start_ns))));
  return text;
}

bool ProfileTimeline::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (auto hit = itemAt(help->pos()))
      QToolTip::showText(help->globalPos(), describe(*hit->second), this);
    else
      QToolTip::hideText();
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
  if (event->button() == Qt::LeftButton) {
    drag_from_ = event->pos();
    drag_view_start_ = view_start_;
    setCursor(Qt::ClosedHandCursor);
  }
}

void ProfileTimeline::mouseMoveEvent(QMouseEvent* event) {
  if (!drag_from_) return;
  const double ns_per_px = (view_end_ - view_start_) / std::max(1, width() - kLabelWidth);
  const double start = drag_view_start_ - (event->pos().x() - drag_from_->x()) * ns_per_px;
  setViewRange(start, start + (view_end_ - view_start_));
}

void ProfileTimeline::mouseReleaseEvent(QMouseEvent*) {
  drag_from_.reset();
  unsetCursor();
}

void ProfileTimeline::mouseDoubleClickEvent(QMouseEvent*) { resetZoom(); }

}  // namespace shardscope::gui
