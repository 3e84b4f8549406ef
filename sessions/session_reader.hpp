#pragma once
// Reading sessions back: listing with filters, one session's details, its per-step curves and its
// raw records. Plain structs out; call from any thread that owns its own Store.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// One row of `sessions list`.
struct SessionInfo {
  std::int64_t id = 0;
  std::string uid;
  std::string name;
  std::string status;  ///< "running" until RunEnd arrives
  std::optional<double> started_at;
  std::optional<double> ended_at;
  std::optional<double> wall_time_s;
  int world_size = 0;
  std::string config_hash;
  std::string shardscope_version;
  std::string git_hash;
  std::vector<std::string> hosts;  ///< distinct hosts of its ranks
  std::vector<std::string> tags;
  std::optional<std::int64_t> first_step;
  std::optional<std::int64_t> last_step;
  std::string origin;  ///< "" for ShardScope's engine; "deepspeed-import", "deepspeed-watch" (schema 4)
};

/// Filters of list_sessions; empty fields match everything.
struct SessionFilter {
  std::string name_contains;       ///< case-insensitive substring of the name
  std::optional<double> started_after;   ///< Unix seconds, inclusive
  std::optional<double> started_before;  ///< Unix seconds, exclusive
  std::string config_hash_prefix;  ///< like a short git hash
  std::string version;             ///< ShardScope version, exact or prefix ("0.1")
  std::string host;                ///< a rank ran on this host
  std::string tag;
  std::string status;
  std::size_t limit = 0;           ///< 0 = no limit; newest first
};

struct RankDetail {
  RankInfo info;
  std::optional<int> exit_code;
};

/// One host of a session: where its ranks ran and how its clock relates to the collector's host.
struct SessionHost {
  std::string host;
  std::optional<int> node_rank;
  /// This host's clock minus the collector host's (a timestamp t of this host is t - offset on the
  /// collector's clock); unset for a one-host run or a host never probed.
  std::optional<double> clock_offset_s;
  std::optional<double> clock_uncertainty_s;  ///< half the probe's round trip
  std::string shardscope_version;
  std::string git_hash;
  std::vector<int> ranks;                     ///< ascending
};

/// Everything recorded at run start and end.
struct SessionDetail {
  SessionInfo info;
  std::vector<std::string> command_line;
  std::string config_json;
  std::optional<EnvironmentReport> environment;  ///< absent when RunStart never arrived
  std::vector<RankDetail> ranks;
  std::vector<SessionHost> hosts;                ///< in node order, then by name
  /// The variables the launcher gave every rank (credentials appear as kRedactedValue), by name.
  std::vector<std::pair<std::string, std::string>> environment_variables;
  std::optional<double> peak_tflops_per_gpu;
  std::string origin_json;  ///< for imported and watched runs: what was read (JSON object), else ""
};

/// A per-step quantity of StepMetrics.
enum class Metric {
  kLoss, kLr, kLossScale, kGradNorm, kStepTime, kSamplesPerS, kTokensPerS, kTflops,
  kMemAllocated, kMemReserved, kMemPeak,
};

/// How ranks are combined at one step: loss-like values are averaged over the ranks that report
/// them, step time takes the slowest rank, throughput sums, memory takes the largest rank.
enum class RankAggregate { kMean, kMax, kSum, kMin };

struct CurvePoint {
  std::int64_t step = 0;
  double value = 0;
  double wall_time = 0;  ///< latest wall time reported for the step
};

/// Every metric, in display order.
const std::vector<Metric>& all_metrics();
/// Column-style name ("loss", "step_time_ms", "tokens_per_s", ...).
const char* metric_name(Metric metric);
/// Inverse of metric_name; throws SessionsError(kInvalidArgument) listing the valid names.
Metric metric_from_name(const std::string& name);
/// The aggregate used when none is asked for (see RankAggregate).
RankAggregate default_aggregate(Metric metric);

/// Sessions matching `filter`, newest first.
std::vector<SessionInfo> list_sessions(Store& store, const SessionFilter& filter = {});
/// Resolves a selector: a numeric id, a uid (or unique uid prefix of 6+ digits), or an exact name
/// (the newest when several share it is refused as ambiguous). Throws StoreError(kNotFound/kAmbiguous).
std::int64_t find_session(Store& store, const std::string& selector);
/// One session's details; throws StoreError(kNotFound).
SessionDetail load_session(Store& store, std::int64_t session_id);
/// Every host of a session: the hosts a launcher reported (node rank, clock offset, build) joined
/// with the hosts its ranks ran on, each with its ranks (session_hosts.cpp).
std::vector<SessionHost> load_session_hosts(Store& store, std::int64_t session_id);
/// The clock offset of the host `rank` ran on (SessionHost::clock_offset_s), 0 when unknown.
double rank_clock_offset_s(const std::vector<SessionHost>& hosts, int rank);

/// One metric per step, combined over ranks (or of one rank when `rank` is set), in step order.
std::vector<CurvePoint> load_curve(Store& store, std::int64_t session_id, Metric metric,
                                   std::optional<int> rank = std::nullopt,
                                   std::optional<RankAggregate> aggregate = std::nullopt);
/// Named timers of the session ("forward", "backward", ...).
std::vector<std::string> load_timer_names(Store& store, std::int64_t session_id);
/// One timer per step (slowest rank), in step order.
std::vector<CurvePoint> load_timer_curve(Store& store, std::int64_t session_id, const std::string& timer);
/// The names of the session's scalar series (schema 4), sorted.
std::vector<std::string> load_series_names(Store& store, std::int64_t session_id);
/// One series per step (the mean over the ranks that report it), in step order.
std::vector<CurvePoint> load_series_curve(Store& store, std::int64_t session_id, const std::string& name);
/// Raw step rows, optionally of one rank.
std::vector<StepMetrics> load_steps(Store& store, std::int64_t session_id, std::optional<int> rank = std::nullopt);
/// The profiled window's GPU activities of one rank, by start time.
std::vector<ActivityRecord> load_activities(Store& store, std::int64_t session_id, int rank);
/// The NVTX ranges of one rank, by start time.
std::vector<NvtxRange> load_nvtx(Store& store, std::int64_t session_id, int rank);
/// Log lines at or above `min_level`, of one rank or all, in arrival order.
std::vector<LogLine> load_logs(Store& store, std::int64_t session_id, std::optional<int> rank = std::nullopt,
                               LogLevel min_level = LogLevel::kDebug);
/// A log line with its row id, for reading a growing session incrementally.
struct LogEntry {
  std::int64_t id = 0;
  LogLine line;
};

/// Step rows of one rank with step > `after_step`, in step order (a live view's incremental read:
/// ranks commit independently, so each rank keeps its own cursor).
std::vector<StepMetrics> load_steps_after(Store& store, std::int64_t session_id, int rank, std::int64_t after_step);
/// The ranks that reported steps, ascending.
std::vector<int> load_step_ranks(Store& store, std::int64_t session_id);
/// Per step > `after_step`, every named timer's slowest-rank time (rank is -1), in step order.
std::vector<TimerBreakdown> load_timer_breakdowns_after(Store& store, std::int64_t session_id, std::int64_t after_step);
/// Log lines with row id > `after_id`, of all ranks, in arrival order, at most `limit` (0 = all).
std::vector<LogEntry> load_logs_after(Store& store, std::int64_t session_id, std::int64_t after_id,
                                      std::size_t limit = 0);
/// The GPU activities of one rank that overlap [start_ns, end_ns), by start time.
std::vector<ActivityRecord> load_activities_window(Store& store, std::int64_t session_id, int rank,
                                                   std::int64_t start_ns, std::int64_t end_ns);
/// The ranks that recorded GPU activities or NVTX ranges (the profiled window), ascending.
std::vector<int> load_profiled_ranks(Store& store, std::int64_t session_id);
/// Deletes the sessions and all their rows in one transaction; returns how many existed.
std::size_t delete_sessions(Store& store, const std::vector<std::int64_t>& session_ids);

}  // namespace shardscope::sessions
