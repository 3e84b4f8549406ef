#include "sessions/regression_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "sessions/errors.hpp"
#include "sessions/session_summary.hpp"

namespace shardscope::sessions {

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw SessionsError(ErrorKind::kInvalidArgument, "a quantile needs p in (0, 1)");
  double lo = -40, hi = 40;  // bisection on the normal CDF: 100 halvings reach double precision
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double student_t_quantile(double p, double df) {
  if (!(df >= 1)) throw SessionsError(ErrorKind::kInvalidArgument, "a t quantile needs at least 1 degree of freedom");
  if (df == 1) return std::tan(std::acos(-1.0) * (p - 0.5));     // Cauchy
  if (df == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));  // closed form
  // Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5): within 0.3 % from 3 degrees of freedom.
  const double z = normal_quantile(p), z2 = z * z;
  const double g1 = (z2 + 1) * z / 4;
  const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) + g4 / (df * df * df * df);
}

namespace {

using Rng = std::mt19937_64;

double mean_of(const std::vector<double>& x) {
  return x.empty() ? 0.0 : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

// Autocovariances at lags 0..max_lag, divided by n (the estimator whose sums stay positive definite).
std::vector<double> autocovariance(const std::vector<double>& x, std::size_t max_lag) {
  const std::size_t n = x.size();
  const double m = mean_of(x);
  std::vector<double> out(max_lag + 1, 0.0);
  for (std::size_t k = 0; k <= max_lag && k < n; ++k) {
    double sum = 0;
    for (std::size_t t = k; t < n; ++t) sum += (x[t] - m) * (x[t - k] - m);
    out[k] = sum / static_cast<double>(n);
  }
  return out;
}

// Politis & White's flat-top (trapezoid) lag window: 1 up to half the bandwidth, then linear to 0.
double flat_top(double t) {
  t = std::fabs(t);
  return t <= 0.5 ? 1.0 : (t <= 1.0 ? 2.0 * (1.0 - t) : 0.0);
}

// The bandwidth M: twice the first lag m after which K_N autocorrelations in a row are
// insignificant (|rho| < 2 sqrt(log10 n / n)), capped at m_max (Politis & White, section 3.2).
std::size_t flat_top_bandwidth(const std::vector<double>& rho, std::size_t n, std::size_t m_max, std::size_t k_n) {
  const double bound = 2.0 * std::sqrt(std::log10(static_cast<double>(n)) / static_cast<double>(n));
  for (std::size_t m = 0; m + k_n < rho.size(); ++m) {
    bool quiet = true;
    for (std::size_t k = m + 1; k <= m + k_n; ++k) quiet = quiet && std::fabs(rho[k]) < bound;
    if (quiet) return std::min(2 * m, m_max);
  }
  return m_max;
}

struct LongRun {
  double variance = 0;       // g(0): the long-run variance (spectral density at 0 times 2 pi)
  double weighted_sum = 0;   // G: sum of |k| R(k), which sets the bootstrap's bias
  double lag0 = 0;           // R(0)
  double lag1_rho = 0;
};

LongRun long_run(const std::vector<double>& x) {
  const std::size_t n = x.size();
  const std::size_t k_n = std::max<std::size_t>(5, static_cast<std::size_t>(std::ceil(std::sqrt(std::log10(n)))));
  const std::size_t m_max = std::min(n - 1, static_cast<std::size_t>(std::ceil(std::sqrt(n))) + k_n);
  const std::vector<double> r = autocovariance(x, std::min(n - 1, m_max + k_n));
  LongRun out;
  out.lag0 = r[0];
  if (r[0] <= 0) return out;  // a constant series: nothing to resample
  std::vector<double> rho(r.size());
  for (std::size_t k = 0; k < r.size(); ++k) rho[k] = r[k] / r[0];
  out.lag1_rho = rho.size() > 1 ? rho[1] : 0;
  const std::size_t bandwidth = flat_top_bandwidth(rho, n, m_max, k_n);
  out.variance = r[0];
  for (std::size_t k = 1; k <= bandwidth && k < r.size(); ++k) {
    const double w = flat_top(static_cast<double>(k) / static_cast<double>(bandwidth));
    out.variance += 2 * w * r[k];
    out.weighted_sum += 2 * w * static_cast<double>(k) * r[k];
  }
  return out;
}

double median_in_place(std::vector<double>& x) {
  const std::size_t mid = x.size() / 2;
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(mid), x.end());
  const double upper = x[mid];
  if (x.size() % 2 == 1) return upper;
  return 0.5 * (upper + *std::max_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(mid)));
}

double statistic_in_place(std::vector<double>& x, RunStatistic statistic) {
  switch (statistic) {
    case RunStatistic::kMedian: return median_in_place(x);
    case RunStatistic::kMean: return mean_of(x);
    case RunStatistic::kMax: return *std::max_element(x.begin(), x.end());
  }
  return 0;
}

// One circular-block resample of `x` into `out` (same length).
void resample_blocks(const std::vector<double>& x, std::size_t block, Rng& rng, std::vector<double>& out) {
  const std::size_t n = x.size();
  out.resize(n);
  std::uniform_int_distribution<std::size_t> start(0, n - 1);
  for (std::size_t i = 0; i < n;) {
    const std::size_t s = start(rng);
    for (std::size_t j = 0; j < block && i < n; ++j, ++i) out[i] = x[(s + j) % n];
  }
}

// A group prepared for resampling: each run's block length, worked out once from the data.
struct PreparedGroup {
  const RunGroup* runs = nullptr;
  std::vector<std::size_t> blocks;
  double widening = 1.0;     // the largest of its runs' interval_widening
  double between_sd = 0.0;   // the runs' random-effect sd (set_between_run_spread), in the metric's unit
};

PreparedGroup prepare(const RunGroup& group, const char* side, std::size_t fixed_block) {
  if (group.empty()) throw SessionsError(ErrorKind::kInvalidArgument, std::string("the ") + side + " group has no runs");
  PreparedGroup out{&group, {}};
  for (const auto& run : group) {
    if (run.empty()) throw SessionsError(ErrorKind::kInvalidArgument, std::string("a run of the ") + side + " group has no samples");
    const SeriesDependence dep = series_dependence(run);
    out.blocks.push_back(fixed_block ? fixed_block : dep.block_length);
    if (!fixed_block) out.widening = std::max(out.widening, dep.interval_widening);
  }
  return out;
}

// One bootstrap replicate of a group's value: every run's steps resampled in blocks (a memory peak
// is its run's own), each run moved by a draw of the between-run spread, then the mean over runs.
double replicate(const PreparedGroup& g, RunStatistic statistic, Rng& rng, std::vector<double>& scratch) {
  std::normal_distribution<double> offset(0.0, 1.0);
  double sum = 0;
  for (std::size_t r = 0; r < g.runs->size(); ++r) {
    const auto& run = (*g.runs)[r];
    double value = *std::max_element(run.begin(), run.end());
    if (statistic != RunStatistic::kMax) {
      resample_blocks(run, g.blocks[r], rng, scratch);
      value = statistic_in_place(scratch, statistic);
    }
    sum += value + (g.between_sd > 0 ? g.between_sd * offset(rng) : 0.0);
  }
  return sum / static_cast<double>(g.runs->size());
}

// The variance of one run's statistic from its own block bootstrap (0 for a peak).
double within_variance(const RunSamples& run, std::size_t block, RunStatistic statistic, double widening, Rng& rng) {
  if (statistic == RunStatistic::kMax) return 0.0;
  std::vector<double> scratch, values;
  for (int i = 0; i < 200; ++i) {
    resample_blocks(run, block, rng, scratch);
    values.push_back(statistic_in_place(scratch, statistic));
  }
  const double m = mean_of(values);
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  return ss / static_cast<double>(values.size() - 1) * widening * widening;
}

// Between-run variance, pooled over the groups with repeats (a method-of-moments random effect, as
// DerSimonian & Laird's): the spread of the runs' values beyond what their within-run noise
// explains, max(0, s^2 - mean within variance). It is 0 when runs agree within their noise, and
// unknown (0) with one run per side.
BetweenRunSpread estimate_spread(const std::vector<const PreparedGroup*>& groups, RunStatistic statistic,
                                 const BootstrapOptions& options) {
  Rng rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  double squares = 0, within = 0, df = 0, runs = 0;
  for (const PreparedGroup* g : groups) {
    const std::size_t k = g->runs->size();
    if (k < 2) continue;
    std::vector<double> x;
    for (std::size_t r = 0; r < k; ++r) {
      x.push_back(run_statistic((*g->runs)[r], statistic));
      within += within_variance((*g->runs)[r], g->blocks[r], statistic, g->widening, rng);
    }
    const double m = mean_of(x);
    for (double v : x) squares += (v - m) * (v - m);
    df += static_cast<double>(k - 1), runs += static_cast<double>(k);
  }
  BetweenRunSpread out;
  out.degrees_of_freedom = df;
  if (df == 0) return out;
  out.sd = std::sqrt(std::max(0.0, squares / df - within / runs));
  // A spread estimated from df + 1 runs is itself uncertain: scale it by t_df / z, as a t interval
  // on the runs would (x1.42 at 3 + 3 runs, x2.2 at 2 + 2, x6.5 at 2 + 1).
  const double p = 0.5 + options.confidence / 2;
  out.inflation = student_t_quantile(p, df) / normal_quantile(p);
  return out;
}

void set_between_run_spread(const std::vector<PreparedGroup*>& groups, RunStatistic statistic, const BootstrapOptions& options) {
  const BetweenRunSpread spread = estimate_spread({groups.begin(), groups.end()}, statistic, options);
  for (PreparedGroup* g : groups) g->between_sd = spread.sd * spread.inflation;
}

double group_value(const RunGroup& group, RunStatistic statistic) {
  double sum = 0;
  for (const auto& run : group) sum += run_statistic(run, statistic);
  return sum / static_cast<double>(group.size());
}

// The percentile interval, widened about the estimate by `widening` (see interval_widening).
Interval percentile_interval(double estimate, std::vector<double> replicates, double confidence, double widening) {
  const double alpha = 1.0 - confidence;
  const double low = percentile(replicates, alpha / 2), high = percentile(replicates, 1.0 - alpha / 2);
  return {estimate, estimate - (estimate - low) * widening, estimate + (high - estimate) * widening};
}

// Blocks of length b cut the series' dependence at their seams, so the block bootstrap's variance
// of a mean falls short of the true one by the factor 1 - G / (g b) to first order (Kunsch 1989;
// Lahiri 2003, section 3.2). Undoing that (at most by sqrt 2) keeps the 95 % interval near 95 %
// under the strong dependence (lag-1 autocorrelation 0.9) where the plain interval covers ~86 %.
double widening_for(const LongRun& lr, std::size_t block) {
  if (lr.variance <= 0 || lr.weighted_sum <= 0) return 1.0;
  const double shortfall = std::min(0.5, lr.weighted_sum / (lr.variance * static_cast<double>(block)));
  return 1.0 / std::sqrt(1.0 - shortfall);
}

void check_options(const BootstrapOptions& o) {
  if (o.replicates < 100 || !(o.confidence > 0 && o.confidence < 1))
    throw SessionsError(ErrorKind::kInvalidArgument, "bootstrap needs at least 100 replicates and a confidence in (0, 1)");
}

}  // namespace

std::vector<double> autocorrelation(const std::vector<double>& x, std::size_t max_lag) {
  std::vector<double> r = autocovariance(x, max_lag);
  const double r0 = r.empty() ? 0 : r[0];
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = r0 > 0 ? r[k] / r0 : (k == 0 ? 1.0 : 0.0);
  return r;
}

std::size_t block_length(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n < 8) return 1;
  const LongRun lr = long_run(x);
  if (lr.lag0 <= 0 || lr.variance <= 0) return 1;
  // b = (2 G^2 / D)^(1/3) n^(1/3) with D = (4/3) g(0)^2 for the circular block bootstrap.
  const double d = 4.0 / 3.0 * lr.variance * lr.variance;
  const double b = std::cbrt(2.0 * lr.weighted_sum * lr.weighted_sum / d) * std::cbrt(static_cast<double>(n));
  const double cap = std::min(3.0 * std::sqrt(static_cast<double>(n)), static_cast<double>(n) / 3.0);
  return static_cast<std::size_t>(std::clamp(std::ceil(b), 1.0, std::max(1.0, std::floor(cap))));
}

SeriesDependence series_dependence(const std::vector<double>& x) {
  SeriesDependence out;
  out.samples = x.size();
  out.block_length = block_length(x);
  out.effective_samples = static_cast<double>(x.size());
  if (x.size() < 8) return out;
  const LongRun lr = long_run(x);
  out.lag1_autocorrelation = lr.lag1_rho;
  out.interval_widening = widening_for(lr, out.block_length);
  if (lr.lag0 > 0 && lr.variance > 0)
    out.effective_samples = std::min(static_cast<double>(x.size()), static_cast<double>(x.size()) * lr.lag0 / lr.variance);
  return out;
}

double run_statistic(const RunSamples& samples, RunStatistic statistic) {
  if (samples.empty()) throw SessionsError(ErrorKind::kInvalidArgument, "a run has no samples");
  std::vector<double> copy = samples;
  return statistic_in_place(copy, statistic);
}

Interval group_interval(const RunGroup& group, RunStatistic statistic, const BootstrapOptions& options) {
  check_options(options);
  PreparedGroup g = prepare(group, "trend", options.fixed_block_length);
  set_between_run_spread({&g}, statistic, options);
  Rng rng(options.seed);
  std::vector<double> scratch, values;
  values.reserve(static_cast<std::size_t>(options.replicates));
  for (int i = 0; i < options.replicates; ++i) values.push_back(replicate(g, statistic, rng, scratch));
  return percentile_interval(group_value(group, statistic), std::move(values), options.confidence, g.widening);
}

Interval relative_change(const RunGroup& baseline, const RunGroup& candidate, RunStatistic statistic,
                         const BootstrapOptions& options) {
  check_options(options);
  PreparedGroup a = prepare(baseline, "baseline", options.fixed_block_length),
                b = prepare(candidate, "candidate", options.fixed_block_length);
  set_between_run_spread({&a, &b}, statistic, options);
  const double base = group_value(baseline, statistic);
  if (base == 0) throw SessionsError(ErrorKind::kInvalidArgument, "the baseline's value is 0: a relative change is undefined");
  Rng rng(options.seed);
  std::vector<double> scratch, changes;
  changes.reserve(static_cast<std::size_t>(options.replicates));
  for (int i = 0; i < options.replicates; ++i) {
    const double ra = replicate(a, statistic, rng, scratch);
    const double rb = replicate(b, statistic, rng, scratch);
    changes.push_back(ra != 0 ? rb / ra - 1.0 : 0.0);
  }
  return percentile_interval(group_value(candidate, statistic) / base - 1.0, std::move(changes), options.confidence,
                             std::max(a.widening, b.widening));
}

namespace {

// The mean curve of the runs `picks` selects (every run has the same length).
std::vector<double> mean_curve(const RunGroup& group, const std::vector<std::size_t>& picks) {
  std::vector<double> out(group[0].size(), 0.0);
  for (std::size_t p : picks)
    for (std::size_t s = 0; s < out.size(); ++s) out[s] += group[p][s];
  for (auto& v : out) v /= static_cast<double>(picks.size());
  return out;
}

std::vector<std::size_t> pick_runs(std::size_t k, Rng* rng) {
  std::vector<std::size_t> picks(k);
  std::iota(picks.begin(), picks.end(), 0);
  if (rng && k > 1) {
    std::uniform_int_distribution<std::size_t> pick(0, k - 1);
    for (auto& p : picks) p = pick(*rng);
  }
  return picks;
}

void check_paired(const RunGroup& a, const RunGroup& b) {
  if (a.empty() || b.empty()) throw SessionsError(ErrorKind::kInvalidArgument, "paired curves need runs on both sides");
  for (const RunGroup* g : {&a, &b})
    for (const auto& run : *g)
      if (run.size() != a[0].size() || run.empty())
        throw SessionsError(ErrorKind::kInvalidArgument, "paired curves need the same non-empty steps in every run");
}

}  // namespace

BetweenRunSpread between_run_spread(const RunGroup& baseline, const RunGroup& candidate, RunStatistic statistic,
                                    const BootstrapOptions& options) {
  check_options(options);
  const PreparedGroup a = prepare(baseline, "baseline", options.fixed_block_length),
                      b = prepare(candidate, "candidate", options.fixed_block_length);
  return estimate_spread({&a, &b}, statistic, options);
}

Interval paired_relative_difference(const RunGroup& baseline, const RunGroup& candidate, const BootstrapOptions& options) {
  check_options(options);
  check_paired(baseline, candidate);
  const auto diff_of = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> d(a.size());
    for (std::size_t s = 0; s < a.size(); ++s) d[s] = b[s] - a[s];
    return d;
  };
  const std::vector<double> base = mean_curve(baseline, pick_runs(baseline.size(), nullptr));
  const std::vector<double> d = diff_of(base, mean_curve(candidate, pick_runs(candidate.size(), nullptr)));
  const double scale = std::fabs(mean_of(base));
  if (scale == 0) throw SessionsError(ErrorKind::kInvalidArgument, "the baseline curve's mean is 0: a relative change is undefined");
  const SeriesDependence dep = series_dependence(d);
  const std::size_t block = options.fixed_block_length ? options.fixed_block_length : dep.block_length;
  const double widening = options.fixed_block_length ? 1.0 : dep.interval_widening;
  Rng rng(options.seed);
  std::vector<double> scratch, changes;
  for (int i = 0; i < options.replicates; ++i) {
    const auto a = mean_curve(baseline, pick_runs(baseline.size(), &rng));
    resample_blocks(diff_of(a, mean_curve(candidate, pick_runs(candidate.size(), &rng))), block, rng, scratch);
    changes.push_back(mean_of(scratch) / std::max(std::fabs(mean_of(a)), 1e-300));
  }
  return percentile_interval(mean_of(d) / scale, std::move(changes), options.confidence, widening);
}

}  // namespace shardscope::sessions
