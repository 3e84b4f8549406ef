#pragma once
// Comparing 2 to 8 sessions: curves aligned by step (optionally smoothed), summary deltas against
// the first session, and diff tables of the runs (command lines and their flags), the resolved
// configs and the environments, in the spirit of TensorBoard's run overlay and W&B's Run Comparer
// with "diff only".

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sessions/session_summary.hpp"
#include "sessions/smoothing.hpp"

namespace shardscope::sessions {

inline constexpr std::size_t kMinCompared = 2;
inline constexpr std::size_t kMaxCompared = 8;

/// One metric of every session on a shared step axis; absent steps are nullopt.
struct AlignedCurve {
  std::string metric;  ///< a metric_name(), "timer:<name>" for a named timer, "series:<name>" for a series
  std::vector<std::int64_t> steps;
  std::vector<std::vector<std::optional<double>>> values;    ///< [session][step index]
  std::vector<std::vector<std::optional<double>>> smoothed;  ///< same shape; equals values for kNone
};

/// One summary quantity across sessions with deltas against the first (the baseline).
struct SummaryDelta {
  std::string field;  ///< "median_step_ms", "tokens_per_s", "final_loss", ...
  std::vector<std::optional<double>> values;
  std::vector<std::optional<double>> delta;          ///< value - baseline
  std::vector<std::optional<double>> delta_percent;  ///< 100 * delta / |baseline|
  bool lower_is_better = false;
};

/// One flattened JSON path ("zero_optimization.stage", "accelerator.gpus[0].name") across sessions.
struct DiffRow {
  std::string path;
  std::vector<std::optional<std::string>> values;  ///< nullopt: the path is absent in that session
  bool differs = false;
};

struct CompareOptions {
  std::vector<Metric> metrics = {Metric::kLoss,       Metric::kLr,         Metric::kStepTime,
                                 Metric::kTokensPerS, Metric::kGradNorm,   Metric::kLossScale,
                                 Metric::kTflops,     Metric::kMemPeak};
  bool include_timers = true;  ///< add a "timer:<name>" curve per named timer
  bool include_series = true;  ///< add a "series:<name>" curve per scalar series (schema 4)
  Smoothing smoothing;
  bool diff_only = true;       ///< drop config/environment rows whose values all agree
  SummaryOptions summary;
};

/// A difference the sessions' DeepSpeed releases make: the release itself, or a config value whose
/// default or presence changed between them, with the value each session ran with.
struct ReleaseChange {
  std::string path;                                ///< "versions.deepspeed", "gradient_clipping", ...
  std::vector<std::optional<std::string>> values;  ///< per session
  std::string note;                                ///< which release changed what
};

struct SessionComparison {
  std::vector<SessionSummary> sessions;
  std::vector<AlignedCurve> curves;
  std::vector<SummaryDelta> summary;
  std::vector<DiffRow> config_diff;
  std::vector<DiffRow> environment_diff;
  std::vector<DiffRow> run_diff;  ///< command lines and their flags, ranks, hosts (run_leaves)
  std::vector<ReleaseChange> deepspeed_release;  ///< empty unless the DeepSpeed releases differ
};

/// Compares the sessions in order (the first is the baseline). Throws SessionsError
/// (kInvalidArgument) for fewer than 2, more than 8 or repeated ids; StoreError for unknown ones.
SessionComparison compare_sessions(Store& store, const std::vector<std::int64_t>& session_ids,
                                   const CompareOptions& options = {});

/// The summary rows of compare_sessions for `sessions` in order (the first is the baseline):
/// each quantity with its values, deltas and direction. Also for summaries read from several files.
std::vector<SummaryDelta> summary_deltas(const std::vector<SessionSummary>& sessions);

/// Flattens JSON text into (path, value) leaves: objects join keys with '.', arrays add "[i]",
/// strings lose their quotes, other scalars keep their JSON spelling. Throws on invalid JSON.
std::vector<std::pair<std::string, std::string>> flatten_json_text(const std::string& json_text);

/// The environment rows of a comparison: the launching node's report, flattened, plus the world
/// size, where each rank ran ("run.ranks[1].host") and the hosts in node order with their ranks,
/// builds and clock offsets ("run.hosts[1].clock_offset": "+12.3 ms (± 0.2 ms)", to 0.1 ms).
/// Also for sessions read from several files.
std::vector<std::pair<std::string, std::string>> environment_leaves(const SessionDetail& detail);

/// The run rows of a comparison: the command line as recorded, each of its flags ("launch.num_procs",
/// "train.hidden", a `--set K=V` as "train.set.K"; a flag without a value is "true"; a repeated
/// flag's values joined by ", "), the number of ranks and the hosts. Flags not given are absent:
/// the engine's defaults (docs/engine.md) apply to them.
std::vector<std::pair<std::string, std::string>> run_leaves(const SessionDetail& detail);

/// Merges flattened documents into rows by path (sorted by path).
std::vector<DiffRow> diff_documents(const std::vector<std::vector<std::pair<std::string, std::string>>>& documents,
                                    bool diff_only);

/// Aligns curves by step and smooths each session's values (over its own present points).
AlignedCurve align_curves(const std::string& metric, const std::vector<std::vector<CurvePoint>>& curves,
                          const Smoothing& smoothing);

}  // namespace shardscope::sessions
