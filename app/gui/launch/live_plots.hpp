#pragma once
// The live charts of a running session: loss, learning rate, loss scale, grad norm, tokens/s,
// TFLOP/s and memory, one curve per rank, plus the step-time breakdown (the top-level phases of
// the profiler's phase analysis, slowest rank, stacked per step with "other"). New steps are
// appended as the poller brings them; the x axis follows the newest step unless paused. A run
// that reports samples/s and no tokens/s (DeepSpeed's ThroughputTimer line) has its samples/s in
// the throughput chart, labelled so. A chart with no point worth drawing (none, or all zero/NaN)
// says why in its middle over a 0..1 axis, with a hint for the kind of run.

#include <map>
#include <set>

#include <QWidget>

#include "app/gui/common/rank_band_chart.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/launch/session_poller.hpp"

class QCustomPlot;
class QCPBars;
class QCPItemText;

namespace shardscope::gui {

class LivePlots : public QWidget {
  Q_OBJECT

 public:
  explicit LivePlots(QWidget* parent = nullptr);

  /// Who writes the steps: the hints of the empty charts name what that run has to be told.
  enum class RunKind { Engine, Watched };

  /// Forgets every point (a new run).
  void clear();
  void setRunKind(RunKind kind);
  /// Above kBandsAboveRanks ranks every metric chart draws the band across ranks and its median
  /// instead of a curve per rank (0: not known yet, curves until it is).
  void setWorldSize(int ranks);
  bool bandMode() const { return band_mode_; }
  /// How a rank is named when hovering a band ("worker-1:3"; "rank 3" by default).
  void setRankName(BandHover::RankName name);
  /// Shows the steps around `step` (-1: the last ones) on every chart; in curve mode rank `rank`'s
  /// curves are drawn bold and the others faded. Stops following.
  void focusRank(int rank, std::int64_t step);
  /// The rank focusRank emphasised (-1: none).
  int focusedRank() const { return focused_rank_; }
  /// The band of `metric` at `step` (tests), in the metric's own unit (bytes for memory).
  std::optional<sessions::RankBand> bandAt(const std::string& metric, std::int64_t step) const;
  /// Appends the steps and breakdowns of one poll.
  void append(const LiveUpdate& update);
  /// While following, the x axes show the newest `window` steps (0 = every step).
  void setFollow(bool follow);
  bool following() const { return follow_; }
  void setWindow(int steps);

  /// The chart of a metric ("loss", "lr", "loss_scale", "grad_norm", "tokens_per_s", "tflops",
  /// "mem_allocated"), or the breakdown ("breakdown").
  QCustomPlot* chart(const std::string& name) const;
  /// Points held for a rank's metric curve (tests).
  int pointCount(const std::string& metric, int rank) const;
  std::int64_t lastStep() const { return last_step_; }
  /// The text an empty chart shows, "" while it has points to draw (tests).
  QString emptyNote(const std::string& name) const;
  /// "tokens_per_s", or "samples_per_s" while the run gave samples/s alone.
  const std::string& throughputMetric() const { return throughput_metric_; }
  /// Median slowest-rank step time over the last 20 steps (ms), for the ETA.
  std::optional<double> recentStepMs() const;
  /// The breakdown's stacked phases at `step` (name -> ms, "other" included).
  std::map<std::string, double> breakdownAt(std::int64_t step) const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  /// forward, backward, step and other fit one row where the chart is wide enough.
  static constexpr int kPhaseLegendColumns = 4;
  /// Eight charts in a 4 x 2 grid still show their curves at this size.
  static constexpr QSize kChartMinimum{140, 110};

  void placeBreakdownLegend();
  void fitBreakdownLegend();
  void addThroughput(const sessions::StepMetrics& m);
  void addPoint(const std::string& metric, int rank, double step, double value);
  void addBandValue(const std::string& metric, int rank, std::int64_t step, double value);
  void redrawBands();
  void fitMemoryUnit(double bytes);
  QString memoryTitle() const;
  void redrawBreakdown();
  void rescale();
  void showThroughputAs(const std::string& metric);
  QString emptyHint(const std::string& metric) const;
  void markEmpty(const std::string& name, QCustomPlot* plot);
  std::vector<QCustomPlot*> allPlots() const;  ///< the metric charts, then the breakdown

  std::vector<std::pair<std::string, QCustomPlot*>> charts_;
  QCustomPlot* breakdown_ = nullptr;
  std::map<std::int64_t, std::vector<sessions::TimerValue>> timers_;  ///< by step, slowest rank
  std::map<std::int64_t, double> step_ms_;                             ///< by step, slowest rank
  std::map<std::string, QCPItemText*> notes_;  ///< by chart name, shown while it is empty
  /// One metric's band while in band mode: each step's value per rank and the step's band.
  struct LiveBand {
    BandGraphs graphs;
    std::map<std::int64_t, std::map<int, double>> values;
    std::map<std::int64_t, sessions::RankBand> bands;
    std::set<std::int64_t> dirty;  ///< steps whose band is to be recomputed
  };
  std::map<std::string, LiveBand> bands_;  ///< by metric
  bool band_mode_ = false;
  int focused_rank_ = -1;
  BandHover::RankName rank_name_;
  std::string throughput_metric_ = "tokens_per_s";
  RunKind kind_ = RunKind::Engine;
  std::int64_t last_step_ = -1;
  bool follow_ = true;
  int window_ = 300;
  ByteUnit memory_unit_{double(1ull << 30), "GiB"};  ///< before any point: GiB, as a GPU run's will be
  double largest_memory_bytes_ = 0;
};

}  // namespace shardscope::gui
