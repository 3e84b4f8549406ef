#pragma once
// The profiled window as a timeline, one row per rank and stream and per NVTX level, as Nsight
// Systems draws it: kernels, NCCL collectives, memcpy/memset and NVTX ranges as boxes. The wheel
// zooms around the cursor, dragging pans, hovering shows name, duration and bytes. Painted by hand
// (not QCustomPlot) so 100k boxes cost one pass that merges boxes narrower than a pixel.

#include <memory>
#include <optional>

#include <QWidget>

#include "app/gui/profile_data.hpp"

namespace shardscope::gui {

class ProfileTimeline : public QWidget {
  Q_OBJECT

 public:
  explicit ProfileTimeline(QWidget* parent = nullptr);

  void setData(std::shared_ptr<const ProfileData> data);
  /// The shown time range in ns (absolute, as the records store it).
  double viewStart() const { return view_start_; }
  double viewEnd() const { return view_end_; }
  void setViewRange(double start_ns, double end_ns);
  /// Shows the whole window.
  void resetZoom();
  /// Zooms by `factor` (>1 zooms in) keeping the time under x = `anchor_x` in place.
  void zoom(double factor, int anchor_x);
  /// The item drawn at `pos`, if any, with its row.
  std::optional<std::pair<const TimelineRow*, const TimelineItem*>> itemAt(const QPoint& pos) const;
  /// The tooltip text of an item: name, kind, duration, bytes, step.
  QString describe(const TimelineItem& item) const;
  /// Widget x of a time, and back.
  double xOf(double ns) const;
  double timeAt(double x) const;
  /// Boxes drawn by the last paint (after merging sub-pixel ones); for tests of the merging.
  std::size_t lastPaintedBoxes() const { return painted_boxes_; }

  static constexpr int kLabelWidth = 190;
  static constexpr int kRulerHeight = 22;
  static constexpr int kRowHeight = 18;

 signals:
  void viewChanged(double start_ns, double end_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;
  QSize sizeHint() const override;

 private:
  void paintRuler(QPainter& painter);
  void paintRow(QPainter& painter, const TimelineRow& row, int top);
  QColor colorOf(const TimelineItem& item) const;

  std::shared_ptr<const ProfileData> data_;
  double view_start_ = 0;
  double view_end_ = 1;
  std::optional<QPoint> drag_from_;
  double drag_view_start_ = 0;
  std::size_t painted_boxes_ = 0;
};

}  // namespace shardscope::gui
