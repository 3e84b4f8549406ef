#pragma once
// One session's records for the analyses, and a selection over them: a time range, a step, a
// kernel or a collective narrows every analysis to the records it covers (Hotspot's and Nsight
// Systems' habit: select in one pane, every pane follows). `shardscope sessions show --profile
// --select-...` and the GUI's profile view run the same select_records() and analyze_records().

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/profile_analyses.hpp"
#include "sessions/session_summary.hpp"

namespace shardscope::profiler {

/// Everything analyze_records() reads, loaded once (the GUI re-selects without re-reading).
struct ProfileRecords {
  std::int64_t session_id = 0;
  std::string session_uid;
  std::vector<int> ranks;                         ///< every rank with any record, ascending
  std::vector<sessions::StepMetrics> steps;       ///< every rank's step rows
  std::vector<sessions::TimerBreakdown> timers;   ///< every rank's timer rows
  std::vector<sessions::CommRecord> comms;        ///< every rank's collective records
  std::map<int, std::vector<sessions::ActivityRecord>> activities;  ///< per rank, by start time
  /// per rank with activities, when load_profile_summary read their summaries instead of the rows
  std::map<int, sessions::RankActivityStats> activity_stats;
  std::map<int, std::vector<sessions::NvtxRange>> nvtx;             ///< per rank, by start time
};

/// What a selection keeps; unset fields keep everything, set ones are combined (AND).
struct ProfileSelection {
  /// [start, end) in ns on the records' clock (host Unix ns): activities overlapping it (cut to
  /// it), and the steps whose span (end of step less its step time) overlaps it.
  std::optional<std::pair<std::int64_t, std::int64_t>> time_range_ns;
  std::optional<std::int64_t> step;  ///< one step: its rows, and the activities recorded in it
  std::string kernel;                ///< one kernel name: its activities, and the steps they ran in
  std::string collective;            ///< one op ("all_reduce"): its records and NCCL kernels, their steps
  bool empty() const { return !time_range_ns && !step && kernel.empty() && collective.empty(); }
};

/// Reads session `session_id` of `store` (steps, timers, collectives, activities, NVTX).
ProfileRecords load_profile_records(sessions::Store& store, std::int64_t session_id);
/// What analyze_records() needs of a whole session, with the activities' summaries instead of the
/// rows (sessions/activity_stats.hpp) and only the ranges of ranks with CPU operators: the same
/// analyses as from load_profile_records(), without reading a 5 M-kernel window. Not for a selection.
ProfileRecords load_profile_summary(sessions::Store& store, std::int64_t session_id);

/// The records `selection` keeps (everything for an empty selection).
ProfileRecords select_records(const ProfileRecords& records, const ProfileSelection& selection);

/// The analyses of `records`, as analyze_session computes them for a whole session.
ProfileAnalyses analyze_records(const ProfileRecords& records, const AnalysisOptions& options = {});

/// The collectives of `comms`: per op the count, bytes, summed latency and mean bandwidths, longest
/// first; for a whole session the same table as `sessions show` prints (SessionSummary::comm_ops).
std::vector<sessions::CommOpStat> summarize_collectives(const std::vector<sessions::CommRecord>& comms);

/// The start of step `m` in host Unix ns: its end (wall_time) less its step time.
std::int64_t step_start_ns(const sessions::StepMetrics& m);
/// The earliest record of `records` (activity, NVTX range or step start) in ns: the origin of the
/// timeline's ruler and of --select-time. 0 when there are none.
std::int64_t profile_origin_ns(const ProfileRecords& records);

/// The collective an NCCL kernel runs ("ncclDevKernel_AllReduce_Sum_f32_RING_LL" -> "all_reduce"),
/// in the comms logger's op names; "" for other kernels.
std::string collective_of_kernel(const std::string& kernel_name);

/// A one-line description: "steps 3-4", "time 1.200-3.400 ms", "kernel ampere_sgemm", ...
std::string describe_selection(const ProfileSelection& selection, std::int64_t origin_ns);

/// The `--select-*` flags of `shardscope sessions show --profile` for `selection`, times in ms
/// from `origin_ns` (the ruler's zero).
std::vector<std::string> selection_arguments(const ProfileSelection& selection, std::int64_t origin_ns);

/// Parses `--select-time A:B` (ms from the origin, e.g. "1.5:3.25"); throws ProfilerError naming
/// the flag when it is not two increasing numbers.
std::pair<std::int64_t, std::int64_t> parse_time_range_ms(const std::string& text, std::int64_t origin_ns);

}  // namespace shardscope::profiler
