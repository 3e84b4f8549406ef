#pragma once
// Bands for many-rank runs: above kBandsAboveRanks ranks a chart draws, per step, the spread across
// ranks (min to max, filled faint) and the median as a line, instead of one curve per rank (64
// curves are a smear; 1,024 are a block). Hovering a band names the step's values and the ranks
// at its ends, the slowest rank of a time chart among them (BandHover).

#include <functional>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include <QColor>
#include <QObject>
#include <QString>

#include "sessions/rank_bands.hpp"

class QCustomPlot;
class QCPGraph;
class QMouseEvent;

namespace shardscope::gui {

/// Up to this many ranks a chart draws one curve per rank; above it, bands.
constexpr int kBandsAboveRanks = 8;

/// The three graphs of one band: max (filled down to min), min, median.
struct BandGraphs {
  QCPGraph* max = nullptr;
  QCPGraph* min = nullptr;
  QCPGraph* median = nullptr;
};

/// Adds an empty band named `name` in `color` to `plot`, with a median line unless the chart draws
/// the median itself (the Sessions page's smoothed curve); `median` is then null.
BandGraphs add_band_graphs(QCustomPlot* plot, const QColor& color, const QString& name, bool with_median = true);
/// Replaces the band's points by `bands`, values multiplied by `scale` (a memory chart's unit).
void set_band_points(const BandGraphs& graphs, const std::vector<sessions::RankBand>& bands, double scale = 1);

/// What hovering a chart's bands shows. One per chart; each band registers how to find its step.
class BandHover : public QObject {
  Q_OBJECT

 public:
  using Lookup = std::function<std::optional<sessions::RankBand>(std::int64_t step)>;
  using RankName = std::function<QString(int rank)>;

  /// The chart's hover (made on first use, a child of `plot`).
  static BandHover* of(QCustomPlot* plot);

  /// Forgets every band (the chart was cleared).
  void clear();
  /// A band: its name, how to find a step's spread, the values' unit ("ms") and scale, and which end
  /// is the slowest rank (the max of a time, the min of a throughput; none for loss and the like).
  enum class Slowest { kNone, kMax, kMin };
  /// `rank_name` names this band's ranks ("node1:7"); none: the chart's (setRankName).
  void addBand(const QString& name, Lookup lookup, const QString& unit, double scale, Slowest slowest,
               RankName rank_name = {});
  void setRankName(RankName name) { rank_name_ = std::move(name); }
  /// The text shown when hovering step `step`: one line per band that has the step ("" when none does).
  QString text(std::int64_t step) const;

 private:
  explicit BandHover(QCustomPlot* plot);
  void onMouseMove(QMouseEvent* event);

  struct Band {
    QString name;
    Lookup lookup;
    QString unit;
    double scale = 1;
    Slowest slowest = Slowest::kNone;
    RankName rank_name;
  };
  QCustomPlot* plot_;
  std::vector<Band> bands_;
  RankName rank_name_;
};

/// A lookup over bands in step order (binary search; `bands` must outlive the lookup).
BandHover::Lookup band_lookup(std::shared_ptr<const std::vector<sessions::RankBand>> bands);

/// The slowest end of a metric's band: the max of a time ("step_time_ms", "timer:*", "comm:*"),
/// the min of a throughput ("tokens_per_s", "samples_per_s", "tflops"), else none.
BandHover::Slowest slowest_end(const std::string& metric);

}  // namespace shardscope::gui
