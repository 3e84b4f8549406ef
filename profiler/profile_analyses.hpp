#pragma once
// Analyses of one recorded session (issue 8, item 7; docs/profiler.md "Analyses" has each
// definition): time per phase per step, communication hidden behind compute vs exposed, top kernels,
// GPU idle time, the slowest rank per step, and for an imported PyTorch profiler trace the top CPU
// operators and the host time outside them (profile_operators.hpp). Each is a plain struct, an aligned text table and a
// JSON document. `shardscope sessions show --profile` and the GUI's profile page print these.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profiler/profile_operators.hpp"
#include "sessions/activity_stats.hpp"
#include "sessions/events.hpp"

namespace shardscope::sessions {
class Store;
}

namespace shardscope::profiler {

struct AnalysisOptions {
  std::int64_t warmup_steps = 0;  ///< leave the first N steps out of phase means and stragglers
  std::size_t top_kernels = 10;   ///< kernels listed per rank (0 = all)
  std::size_t text_step_rows = 10;  ///< per-step rows the text tables show (JSON has every step)
  std::size_t top_operators = 15;   ///< CPU operator groups listed per rank (0 = all)
  OperatorOrder operator_order = OperatorOrder::kSelf;  ///< rank them by self or total time
};

// ---- (a) time per phase per step -------------------------------------------------------------

/// One timer column. Top-level phases (forward, backward, step) are disjoint parts of a step and
/// are summed for "other"; the rest (backward_inner, backward_allreduce, reduce_scatter, gathers,
/// micro-step and unknown timers) lie inside a top-level phase and are shown but not summed.
struct PhaseColumn {
  std::string name;        ///< the timer name as recorded
  bool top_level = false;  ///< summed into the step (see above)
};

struct PhaseStep {
  std::int64_t step = 0;
  std::optional<double> step_time_ms;      ///< StepMetrics.step_time_ms
  std::vector<std::optional<double>> ms;   ///< one per PhaseBreakdown::columns; unset = not recorded
  std::optional<double> other_ms;          ///< step time - sum of top-level phases (may be negative)
};

struct PhaseRank {
  int rank = 0;
  std::vector<PhaseStep> steps;                 ///< in step order, warm-up steps included
  std::vector<std::optional<double>> mean_ms;   ///< per column, over the steps after warm-up
  std::optional<double> mean_step_ms;
  std::optional<double> mean_other_ms;
  std::int64_t counted_steps = 0;               ///< steps in the means
};

struct PhaseBreakdown {
  std::vector<PhaseColumn> columns;  ///< canonical order (forward, backward, ..., step), then by name
  std::vector<PhaseRank> ranks;      ///< by rank
};

// ---- (b) communication hidden vs exposed -----------------------------------------------------

enum class OverlapMethod {
  kActivity,     ///< NCCL kernel intervals vs compute kernels of the profiled window
  kTimers,       ///< collective latencies (CommRecord) vs communication timers
  kUnavailable,  ///< neither activity records nor collective records
};

struct CommOverlapRank {
  int rank = 0;
  OverlapMethod method = OverlapMethod::kUnavailable;
  std::optional<double> comm_ms;          ///< time with communication in flight
  std::optional<double> hidden_ms;        ///< of which compute ran at the same time
  std::optional<double> exposed_ms;       ///< of which nothing else ran (the step waited)
  std::optional<double> hidden_fraction;  ///< hidden / comm
  std::int64_t comm_kernels = 0;          ///< NCCL kernels (activity) or collectives (timers)
  std::string note;                       ///< how the numbers were obtained
};

// ---- (c) top kernels --------------------------------------------------------------------------

struct KernelStat {
  std::string name;
  std::int64_t calls = 0;
  double total_ms = 0;
  double mean_us = 0;
  double share = 0;  ///< total / the rank's summed kernel time, 0..1
  bool is_communication = false;
};

struct TopKernelsRank {
  int rank = 0;
  double kernel_time_ms = 0;         ///< summed over every kernel of the rank
  std::size_t distinct_kernels = 0;
  std::vector<KernelStat> kernels;   ///< by total time, longest first, at most top_kernels
};

// ---- (d) GPU idle time ------------------------------------------------------------------------

struct DeviceIdle {
  int rank = 0;
  int device = 0;
  std::int64_t window_start_ns = 0;  ///< first activity start on the device
  std::int64_t window_end_ns = 0;    ///< last activity end on the device
  double window_ms = 0;
  double busy_ms = 0;                ///< union of kernel, memcpy and memset intervals
  double idle_ms = 0;                ///< window - busy
  double idle_fraction = 0;          ///< idle / window, 0..1
  std::int64_t activities = 0;
};

// ---- (e) stragglers ---------------------------------------------------------------------------

struct StragglerStep {
  std::int64_t step = 0;
  int ranks = 0;              ///< ranks that reported a step time
  int slowest_rank = 0;       ///< ties go to the lowest rank
  double slowest_ms = 0;
  double median_ms = 0;       ///< median over the ranks
  double fastest_ms = 0;
  double lag_ms = 0;          ///< slowest - median
};

struct StragglerRank {
  int rank = 0;
  std::int64_t slowest_count = 0;  ///< steps where this rank was the slowest
  double mean_step_ms = 0;
  double mean_lag_ms = 0;          ///< mean of (this rank's step time - the step's median)
  std::int64_t steps = 0;
};

struct StragglerAnalysis {
  std::vector<StragglerStep> steps;  ///< steps after warm-up with at least one rank
  std::vector<StragglerRank> ranks;  ///< by rank
};

// ---- everything ---------------------------------------------------------------------------------

struct ProfileAnalyses {
  std::int64_t session_id = 0;
  std::string session_uid;
  bool has_profiled_window = false;  ///< the session holds activity records
  PhaseBreakdown phases;
  std::vector<CommOverlapRank> comm_overlap;  ///< by rank
  std::vector<TopKernelsRank> top_kernels;    ///< ranks with activity records
  std::vector<DeviceIdle> gpu_idle;           ///< by rank, then device
  StragglerAnalysis stragglers;
  bool has_cpu_operators = false;             ///< the session holds CPU operator ranges (a PyTorch trace)
  OperatorOrder operator_order = OperatorOrder::kSelf;
  std::vector<TopOperatorsRank> top_operators;  ///< ranks with CPU operators
  std::vector<HostIdle> host_idle;              ///< by rank, then thread
};

/// True for NCCL kernels ("nccl...", "ncclDevKernel_...", also after a leading "void ").
bool is_communication_kernel(const std::string& name);
/// "activity", "timers", "unavailable".
const char* overlap_method_name(OverlapMethod method);

/// All analyses of session `session_id` of `store` (see sessions::find_session for selectors), from
/// the profiled window's summaries (load_profile_summary), not its rows.
ProfileAnalyses analyze_session(sessions::Store& store, std::int64_t session_id, const AnalysisOptions& options = {});

/// (a) from step rows and timer rows of any ranks.
PhaseBreakdown compute_phase_breakdown(const std::vector<sessions::StepMetrics>& steps,
                                       const std::vector<sessions::TimerBreakdown>& timers,
                                       const AnalysisOptions& options = {});
/// (b) from one rank's activities of the profiled window.
CommOverlapRank compute_comm_overlap_from_activities(int rank, const std::vector<sessions::ActivityRecord>& records);
/// (b) from one rank's summary of them (the same figures without the rows; schema 11).
CommOverlapRank compute_comm_overlap_from_stats(const sessions::RankActivityStats& stats);
/// (b) fallback from one rank's collective records and timer rows.
CommOverlapRank compute_comm_overlap_from_timers(int rank, const std::vector<sessions::CommRecord>& comms,
                                                 const std::vector<sessions::TimerBreakdown>& timers);
/// (c) from one rank's activities.
TopKernelsRank compute_top_kernels(int rank, const std::vector<sessions::ActivityRecord>& records, std::size_t top_n);
/// (c) from one rank's summary of its activities.
TopKernelsRank compute_top_kernels_from_stats(const sessions::RankActivityStats& stats, std::size_t top_n);
/// (d) per device of one rank's activities.
std::vector<DeviceIdle> compute_gpu_idle(int rank, const std::vector<sessions::ActivityRecord>& records);
/// (d) per device of one rank's summary of its activities.
std::vector<DeviceIdle> compute_gpu_idle_from_stats(const sessions::RankActivityStats& stats);
/// (e) from step rows of every rank.
StragglerAnalysis compute_stragglers(const std::vector<sessions::StepMetrics>& steps, const AnalysisOptions& options = {});

/// Aligned text tables, one per analysis.
std::string format_phase_breakdown(const PhaseBreakdown& phases, const AnalysisOptions& options = {});
std::string format_comm_overlap(const std::vector<CommOverlapRank>& ranks);
std::string format_top_kernels(const std::vector<TopKernelsRank>& ranks);
std::string format_gpu_idle(const std::vector<DeviceIdle>& devices);
std::string format_stragglers(const StragglerAnalysis& stragglers, const AnalysisOptions& options = {});
std::string format_top_operators(const std::vector<TopOperatorsRank>& ranks, OperatorOrder order);
std::string format_host_idle(const std::vector<HostIdle>& threads);
/// Every table with its heading; says so when the session has no profiled window.
std::string format_profile_analyses(const ProfileAnalyses& analyses, const AnalysisOptions& options = {});

/// JSON forms; keys are the struct field names; unknown values are null.
nlohmann::json to_json(const PhaseBreakdown& phases);
nlohmann::json to_json(const CommOverlapRank& rank);
nlohmann::json to_json(const TopKernelsRank& rank);
nlohmann::json to_json(const DeviceIdle& device);
nlohmann::json to_json(const StragglerAnalysis& stragglers);
nlohmann::json to_json(const TopOperatorsRank& rank);
nlohmann::json to_json(const HostIdle& thread);
/// {"session_id", "session_uid", "has_profiled_window", "phases", "comm_overlap", "top_kernels",
///  "gpu_idle", "stragglers", "has_cpu_operators", "operator_order", "top_operators", "host_idle"}.
nlohmann::json to_json(const ProfileAnalyses& analyses);

}  // namespace shardscope::profiler
