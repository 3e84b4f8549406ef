#pragma once
// One session's profile, ready for the profile view: the records (profiler::ProfileRecords, kept
// so a selection can be re-analysed without re-reading the file) and the timeline rows built from
// them. Per rank, as Nsight Systems stacks them: the steps, the phases the timers measured
// (forward, backward, step, laid out from each step's start), a memory counter track, the NVTX
// levels, then one row per GPU stream (kernels, NCCL collectives, memcpy, memset). Loaded off the
// GUI thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/profile/profile_rank_summary.hpp"
#include "app/gui/sessions/compare_data.hpp"
#include "profiler/profile_selection.hpp"
#include "sessions/events.hpp"
#include "sessions/session_summary.hpp"

namespace shardscope::gui {

enum class TimelineKind : std::uint8_t { kKernel, kCollective, kMemcpy, kMemset, kNvtx, kStep, kPhase };

struct TimelineItem {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;
  std::int64_t step = -1;
  std::uint32_t name = 0;  ///< index into ProfileData::names
  TimelineKind kind = TimelineKind::kKernel;
};

enum class RowKind : std::uint8_t { kSteps, kPhases, kMemory, kNvtx, kStream };

/// One sample of a counter track: the value from `t_ns` on.
struct CounterPoint {
  std::int64_t t_ns = 0;
  double value = 0;
};

struct TimelineRow {
  std::string label;  ///< "rank 0 · GPU 0 · stream 7", "rank 0 · NVTX 1", "rank 0 · memory"
  int rank = 0;
  RowKind kind = RowKind::kStream;
  std::vector<TimelineItem> items;     ///< by start time
  std::int64_t longest_ns = 0;         ///< lets a paint find items that began left of the view
  std::vector<CounterPoint> counter;   ///< kMemory: allocated bytes at each step's end
  double counter_max = 0;
};

struct ProfileData {
  SessionRef session;
  std::shared_ptr<const profiler::ProfileRecords> records;
  std::vector<std::string> names;
  std::vector<TimelineRow> rows;
  std::int64_t origin_ns = 0;  ///< profiler::profile_origin_ns: the ruler's zero and --select-time's
  std::int64_t start_ns = 0;   ///< earliest start over all rows
  std::int64_t end_ns = 0;     ///< latest end
  std::int64_t window_start_ns = 0, window_end_ns = 0;  ///< the GPU activity's extent (else all)
  std::size_t items = 0;
  profiler::ProfileAnalyses analyses;  ///< of the whole session
  std::vector<RankBusy> busy;          ///< per rank with GPU activity: its merged busy time (the summary lane)
  std::vector<sessions::RankInfo> rank_infos;  ///< every rank with its host, for the rank filter
  std::string error;
};

/// Reads `session`'s records and builds the rows; never throws (errors land in `error`).
std::shared_ptr<const ProfileData> load_profile(const SessionRef& session);

/// Builds the rows of `records` (exposed for tests).
void build_timeline(const profiler::ProfileRecords& records, ProfileData& out);

/// A kernel's name as the timeline labels a box: "void at::native::vectorized_elementwise_kernel<4,
/// ...>(int, ...)" -> "vectorized_elementwise_kernel" (the tooltip keeps the full name).
std::string short_kernel_name(const std::string& name);

/// "1.23 ms", "850 ns", "12.0 us".
std::string format_duration_ns(double ns);

}  // namespace shardscope::gui
