#pragma once
// Regression verdicts between two groups of sessions (issue 30; docs/sessions.md, "Regression
// checks"): per metric the change with its 95 % interval and a verdict against the user's
// thresholds, the kernels, collectives and phases that moved with their share of the step-time
// change, and what else differs (versions, config, flipped DeepSpeed defaults, hosts, GPUs).
// `shardscope sessions check` prints it; the GUI shows the same plain struct.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/regression_stats.hpp"
#include "sessions/session_compare.hpp"

namespace shardscope::sessions {

class Store;

enum class Verdict {
  kRegression,       ///< the interval excludes 0 on the worse side and the change passes the threshold
  kImprovement,      ///< the same on the better side
  kWithinThreshold,  ///< a real change (the interval excludes 0) but smaller than the threshold
  kWithinNoise,      ///< the interval holds 0: the data cannot tell the change from noise
};

/// "regression", "improvement", "within_threshold", "within_noise".
const char* verdict_name(Verdict verdict);

/// How much worse a metric may get before it counts: `fraction` of its baseline value (0.03 = 3 %).
struct MetricThreshold {
  std::string metric;  ///< step_time, throughput, mfu, peak_memory, reserved_memory, loss, phase:NAME, comm:OP, phase:*, comm:*
  double fraction = 0;
};

/// The documented defaults (docs/sessions.md): step_time 3 %, throughput 3 %, mfu 3 %,
/// peak_memory 2 %, reserved_memory 5 %, loss 2 %, phase:* 5 %, comm:* 5 %.
const std::vector<MetricThreshold>& default_thresholds();
/// The metrics that fail a check when --fail-on is not given: all defaults except phase:* and comm:*
/// (phases and collectives explain a step-time change; they do not fail a run on their own).
bool gates_by_default(const std::string& metric);
/// Parses "step_time:+3%,peak_memory:+2%,throughput:-3%": a sign, when given, must be the metric's
/// worse direction. Throws SessionsError(kInvalidArgument) naming the bad item and the valid names.
std::vector<MetricThreshold> parse_thresholds(const std::string& text);
/// True when a larger value of `metric` is worse (times, memory, loss); false for throughput and MFU.
bool higher_is_worse(const std::string& metric);

/// One metric's comparison.
struct MetricVerdict {
  std::string metric;     ///< "step_time", "throughput", "phase:forward", "comm:all_reduce", ...
  std::string unit;       ///< "ms", "tokens/s", "bytes", "fraction", "" (loss)
  std::string statistic;  ///< what was compared ("median per step", "max over steps", ...)
  bool higher_is_worse = true;
  double baseline = 0;    ///< the baseline group's value, in `unit` (loss: its mean over the shared steps)
  double candidate = 0;
  Interval change;        ///< candidate / baseline - 1 with its 95 % interval (fractions)
  double threshold = 0;   ///< allowed worsening (fraction)
  bool gating = false;    ///< a regression of this metric fails the check
  Verdict verdict = Verdict::kWithinNoise;
  std::size_t baseline_samples = 0, candidate_samples = 0;  ///< steps over all runs of the group
  double baseline_effective = 0, candidate_effective = 0;   ///< effective samples (autocorrelation)
  std::size_t block_length = 1;  ///< the longest circular block used
  /// How much the repeats' runs differ beyond their step noise (sd over the baseline value; 0 when
  /// they agree or there are no repeats), and how much more it counts (t(df) / z).
  double between_run_spread = 0;
  double between_run_inflation = 1;
};

/// A kernel family, collective or phase whose time per step moved.
struct Contributor {
  std::string kind;  ///< "kernel", "collective", "phase"
  std::string name;  ///< kernel family ("at::native::layer_norm_backward_kernel"), op or timer
  double baseline_ms = 0;   ///< per step, mean over the group's runs (and over ranks for kernels)
  double candidate_ms = 0;
  double delta_ms = 0;
  std::optional<double> share_of_change;  ///< delta / the step-time change; unset when the step did not move
  double percent_of_step = 0;             ///< 100 * delta / the baseline's step time
};

/// One thing that differs between the sessions: a version, a config value, a flipped default.
struct ChangedValue {
  std::string kind;  ///< "version", "gpu", "host", "kernel_build", "config", "default_flip", "run"
  std::string path;
  std::vector<std::optional<std::string>> values;  ///< per session: baseline ones, then candidate ones
  std::string note;  ///< for default flips: the DeepSpeed releases and values involved
};

struct CheckOptions {
  std::optional<std::int64_t> warmup_steps;  ///< unset: the first max(2, 10 %) steps of each run
  std::vector<MetricThreshold> thresholds;   ///< override the defaults; also what gates when fail_on_given
  bool fail_on_given = false;                ///< only `thresholds` gate (--fail-on); else the default set
  BootstrapOptions bootstrap;
  std::size_t top_contributors = 8;
  std::size_t min_samples = 5;               ///< fewer steps after warm-up in a run is unusable input
};

struct RegressionReport {
  std::vector<SessionInfo> baseline, candidate;
  std::vector<std::int64_t> warmup_steps;  ///< per session, baseline then candidate
  std::vector<MetricVerdict> metrics;
  bool profiled = false;  ///< every session had a profiled window: kernel families are in contributors
  std::vector<Contributor> contributors;  ///< by |delta|, largest first
  std::vector<ChangedValue> changes;
  std::vector<std::string> notes;  ///< metrics left out and why, mixed groups, ...
  bool failed = false;             ///< a gating metric regressed
};

/// Compares the candidate group with the baseline group. Throws SessionsError(kInvalidArgument)
/// for unusable input: an empty group, a session in both, sessions of different models, a run with
/// fewer than min_samples step times after warm-up; StoreError for unknown sessions.
RegressionReport check_regression(Store& store, const std::vector<std::int64_t>& baseline,
                                  const std::vector<std::int64_t>& candidate, const CheckOptions& options = {});

/// Per metric the verdict from its change, threshold and direction (the rule in docs/sessions.md).
Verdict decide(const Interval& change, double threshold, bool higher_is_worse);

/// The threshold that applies to `metric`: exact name, then its family wildcard, then the default.
double threshold_for(const std::string& metric, const std::vector<MetricThreshold>& given);

/// A kernel's family: the name without return type, template and call arguments and anonymous
/// namespaces; cuBLAS/CUTLASS GEMMs become "gemm", NCCL kernels "nccl:<Op>".
std::string kernel_family(const std::string& kernel_name);

}  // namespace shardscope::sessions
