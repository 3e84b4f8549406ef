#pragma once
// The statistics behind `sessions check` and `sessions trend` (docs/sessions.md, "Regression
// checks" gives the method and why): a metric's change between two groups of runs with a 95 %
// interval from a two-level bootstrap: each run moved by a draw of the between-run spread its
// repeats show (a random effect), and inside each run the per-step series resampled in circular blocks whose length follows the series' autocorrelation
// (Politis & White 2004, with Patton, Politis & White's 2009 correction). Step times are
// autocorrelated (thermal state, allocator state, background load drift slowly), so treating
// steps as independent would make 200 steps look like far more evidence than they hold.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardscope::sessions {

/// One run's per-step samples of a metric, in step order.
using RunSamples = std::vector<double>;
/// Repeats of one side of a comparison (the baseline or the candidate).
using RunGroup = std::vector<RunSamples>;

/// What summarizes one run's samples.
enum class RunStatistic {
  kMedian,  ///< timings and throughput: robust to the odd slow step (a checkpoint, a GC pause)
  kMean,    ///< paired differences (loss)
  kMax,     ///< memory peaks: one number per run; only runs are resampled
};

struct BootstrapOptions {
  int replicates = 2000;
  double confidence = 0.95;
  std::uint64_t seed = 0x5eed5eedULL;  ///< fixed, so the same sessions always get the same verdict
  /// 0: each run's block length from its autocorrelation (block_length()). A fixed length (1 is
  /// the naive bootstrap that treats steps as independent) is for studying the method.
  std::size_t fixed_block_length = 0;
};

/// A point estimate with its two-sided interval (units of the quantity: a fraction for changes).
struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
};

/// How much evidence one run's series holds.
struct SeriesDependence {
  std::size_t samples = 0;
  std::size_t block_length = 1;  ///< circular-block length used for this series
  double lag1_autocorrelation = 0;
  double effective_samples = 0;  ///< n * variance / long-run variance (n for independent steps)
  double interval_widening = 1;  ///< undoes the blocks' first-order variance shortfall (1 .. sqrt 2)
};

/// Sample autocorrelations at lags 0..max_lag (the biased estimator; lag 0 is 1, a constant series
/// gives 1 then 0s).
std::vector<double> autocorrelation(const std::vector<double>& x, std::size_t max_lag);

/// The circular block bootstrap's block length for the mean of `x`, by Politis & White's plug-in
/// rule with a flat-top lag window; 1 for independent samples, at most min(3 sqrt(n), n / 3).
std::size_t block_length(const std::vector<double>& x);

/// Block length, lag-1 autocorrelation and effective sample size of one series.
SeriesDependence series_dependence(const std::vector<double>& x);

/// The standard normal's p-quantile; throws SessionsError(kInvalidArgument) outside (0, 1).
double normal_quantile(double p);
/// Student's t p-quantile with `df` degrees of freedom (exact for 1 and 2, Cornish-Fisher above).
double student_t_quantile(double p, double df);

/// `statistic` of one run.
double run_statistic(const RunSamples& samples, RunStatistic statistic);

/// The group's value (the mean over its runs of `statistic`) with a bootstrap interval (its repeats'
/// between-run spread included, as in relative_change). Throws
/// SessionsError(kInvalidArgument) for an empty group or an empty run.
Interval group_interval(const RunGroup& group, RunStatistic statistic, const BootstrapOptions& options = {});

/// The relative change candidate / baseline - 1 of the group values, with a bootstrap interval
/// (both groups resampled independently in every replicate; with repeats, each run also moved by a
/// draw of the between-run spread the repeats show). Throws SessionsError
/// (kInvalidArgument) for empty groups or a baseline value of zero.
Interval relative_change(const RunGroup& baseline, const RunGroup& candidate, RunStatistic statistic,
                         const BootstrapOptions& options = {});

/// How much runs of one config differ beyond their step noise, pooled over both groups' repeats.
struct BetweenRunSpread {
  double sd = 0;                  ///< the random effect's estimated sd, in the metric's unit (0: none seen)
  double degrees_of_freedom = 0;  ///< runs - groups with repeats; 0 with one run per side
  double inflation = 1;           ///< t(df) / z: how much more it counts in the interval
};

/// The between-run spread relative_change puts into its interval.
BetweenRunSpread between_run_spread(const RunGroup& baseline, const RunGroup& candidate, RunStatistic statistic,
                                    const BootstrapOptions& options = {});

/// Paired curves (loss): every run of both groups holds the same steps in the same order. The
/// change is the mean over steps of (candidate mean curve - baseline mean curve), divided by the
/// baseline curve's mean, with runs resampled per group and the difference series in blocks.
Interval paired_relative_difference(const RunGroup& baseline, const RunGroup& candidate,
                                    const BootstrapOptions& options = {});

}  // namespace shardscope::sessions
