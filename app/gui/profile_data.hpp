#pragma once
// One session's profiled window, ready for the profile view: timeline rows per rank and stream
// (kernels, memcpy, memset, NCCL collectives) and per rank and nesting level (NVTX ranges), the top
// kernels, the collectives table and the profiler's analyses. Loaded off the GUI thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/compare_data.hpp"
#include "profiler/profile_analyses.hpp"
#include "sessions/session_summary.hpp"

namespace shardscope::gui {

enum class TimelineKind : std::uint8_t { kKernel, kCollective, kMemcpy, kMemset, kNvtx };

struct TimelineItem {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;
  std::int64_t step = -1;
  std::uint32_t name = 0;  ///< index into ProfileData::names
  TimelineKind kind = TimelineKind::kKernel;
};

struct TimelineRow {
  std::string label;  ///< "rank 0 · GPU 0 · stream 7", "rank 0 · NVTX 1"
  int rank = 0;
  std::vector<TimelineItem> items;  ///< by start time
  std::int64_t longest_ns = 0;      ///< lets a paint find items that began left of the view
};

struct ProfileData {
  SessionRef session;
  std::vector<std::string> names;
  std::vector<TimelineRow> rows;
  std::int64_t start_ns = 0;  ///< earliest start over all rows
  std::int64_t end_ns = 0;    ///< latest end
  std::size_t items = 0;
  std::vector<sessions::CommOpStat> collectives;  ///< from the session summary
  profiler::ProfileAnalyses analyses;
  std::string analyses_text;  ///< as `shardscope sessions show --profile` prints it
  std::string error;
};

/// Reads `session`'s profiled window; never throws (errors land in `error`).
std::shared_ptr<const ProfileData> load_profile(const SessionRef& session);

/// Builds rows from records of one rank (exposed for tests): one per (device, stream) and one per
/// NVTX nesting level, a range going to the first level free at its start.
void add_rank_rows(int rank, const std::vector<sessions::ActivityRecord>& activities,
                   const std::vector<sessions::NvtxRange>& ranges, ProfileData& out);

/// "1.23 ms", "850 ns", "12.0 us".
std::string format_duration_ns(double ns);

}  // namespace shardscope::gui
