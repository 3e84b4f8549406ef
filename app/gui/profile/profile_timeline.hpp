#pragma once
// A session's profile as a timeline, rows per rank as Nsight Systems stacks them: steps, the
// timers' phases, a memory counter track, NVTX levels, and one row per GPU stream (kernels, NCCL
// collectives, memcpy/memset). The wheel zooms around the cursor, dragging pans, Shift+drag
// selects a time range, a click selects the step, kernel or collective under the cursor, hovering
// shows name, duration and bytes; boxes wide enough carry their (short) kernel names. The
// selection is drawn (range shaded, other kernels faded). Painted by hand (not QCustomPlot) so 100k
// boxes cost one pass that merges boxes narrower than a pixel.
// With more than kFewRanks ranks, lanes are drawn only for the ranks picked (setShownRanks: the
// profile view's rank filter, first rank 0) and two summary lanes on top reduce the rest: per
// bucket of two pixels, the min / median / max across them of the fraction of time busy in
// kernels and in NCCL collectives (profile_rank_summary.hpp); hovering names the least and most
// busy rank, a click adds the lanes of the rank farthest from the median (BusyBand::outlier).

#include <memory>
#include <optional>

#include <QWidget>

#include "app/gui/profile/profile_data.hpp"

namespace shardscope::gui {

class ProfileTimeline : public QWidget {
  Q_OBJECT

 public:
  explicit ProfileTimeline(QWidget* parent = nullptr);

  void setData(std::shared_ptr<const ProfileData> data);
  /// Draws lanes for `ranks` only and summarizes the others (std::nullopt: every rank, no summary).
  void setShownRanks(std::optional<std::vector<int>> ranks);
  /// The ranks with lanes: every rank, or those set (after setData: rank 0 alone above kFewRanks).
  const std::optional<std::vector<int>>& shownRanks() const { return shown_ranks_; }
  /// The ranks the summary lanes reduce (the profiled ranks without lanes).
  std::vector<int> summaryRanks() const;
  /// Summary lanes on top (0 or 2: kernels, collectives); lanes after them are timeline rows.
  int summaryLanes() const { return summary_.empty() ? 0 : 2; }
  /// The lanes drawn, summary lanes included.
  int laneCount() const { return static_cast<int>(row_tops_.size()) - 1; }
  /// The timeline row of lane `lane`, or nullptr for a summary lane.
  const TimelineRow* laneRow(int lane) const;
  /// What the last paint reduced into the summary lanes (one bucket per two pixels).
  const BusySummary& lastSummary() const { return last_summary_; }
  /// The hover text of summary lane `lane` at widget x `x`.
  QString describeSummary(int lane, int x) const;
  /// Draws `selection` (the view does not move).
  void setSelection(const profiler::ProfileSelection& selection);
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
  /// Name labels drawn on boxes by the last paint (they appear once boxes are wide enough).
  std::size_t lastPaintedLabels() const { return painted_labels_; }
  /// The row at widget y, or -1.
  int rowAt(int y) const;
  /// The y of row `index`'s top.
  int rowTop(int index) const;

  static constexpr int kFewRanks = 8;        ///< up to this many ranks, every rank gets its lanes
  static constexpr int kSummaryBucketPx = 2;  ///< pixels per bucket of the summary lanes
  static constexpr int kLabelWidth = 190;
  static constexpr int kRulerHeight = 22;
  static constexpr int kRowHeight = 18;
  static constexpr int kCounterHeight = 36;  ///< a counter track is two rows high

 signals:
  void viewChanged(double start_ns, double end_ns);
  /// The user chose a time range (Shift+drag), a step (a step or phase box), a kernel (a kernel,
  /// memcpy or memset box) or a collective (an NCCL kernel): the view narrows every pane to it.
  void rangeSelected(std::int64_t start_ns, std::int64_t end_ns);
  void stepSelected(std::int64_t step);
  void kernelSelected(const QString& name);
  void collectiveSelected(const QString& op);
  /// A click on a summary lane: the rank of that bucket farthest from the median (a straggler candidate).
  void rankPicked(int rank);

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
  void paintCounter(QPainter& painter, const TimelineRow& row, int top);
  void paintSummary(QPainter& painter, int lane, int top);
  void layoutLanes();
  int bucketAt(int x) const;
  void paintSelection(QPainter& painter);
  QColor colorOf(const TimelineItem& item) const;
  bool selected(const TimelineItem& item) const;
  int rowHeight(const TimelineRow& row) const;
  void selectAt(const QPoint& pos);

  std::shared_ptr<const ProfileData> data_;
  std::vector<int> row_tops_;  ///< y of each lane's top, then the bottom
  std::optional<std::vector<int>> shown_ranks_;
  std::vector<int> lanes_;               ///< data_->rows indices drawn after the summary lanes
  std::vector<const RankBusy*> summary_;  ///< the ranks the summary lanes reduce
  BusySummary last_summary_;
  profiler::ProfileSelection selection_;
  double view_start_ = 0;
  double view_end_ = 1;
  std::optional<QPoint> drag_from_;
  bool range_drag_ = false;
  int range_drag_x_ = 0;
  double drag_view_start_ = 0;
  std::size_t painted_boxes_ = 0;
  std::size_t painted_labels_ = 0;
};

}  // namespace shardscope::gui
