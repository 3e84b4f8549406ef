#pragma once
// Raw per-rank rows the profile analyses need and session_reader does not offer: every timer row
// of every rank (load_timer_curve keeps only the slowest rank), collective records, and the ranks
// that recorded a profiled window.

#include <cstdint>
#include <optional>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// Timer rows of every rank (or of one), one TimerBreakdown per (rank, step), by rank then step;
/// the timers of a row are in name order.
std::vector<TimerBreakdown> load_timer_breakdowns(Store& store, std::int64_t session_id,
                                                  std::optional<int> rank = std::nullopt);
/// Collective records of every rank (or of one), by rank, step, then arrival.
std::vector<CommRecord> load_comm_records(Store& store, std::int64_t session_id,
                                          std::optional<int> rank = std::nullopt);
/// One rank's activities by start time with their optional details (grid, block, registers,
/// correlation id, throughput; schema 3), which load_activities leaves out.
std::vector<ActivityRecord> load_activity_details(Store& store, std::int64_t session_id, int rank);
/// Ranks that have activity records, ascending.
std::vector<int> load_activity_ranks(Store& store, std::int64_t session_id);
/// True when the rank has CPU operator ranges (domain kCpuOpDomain: an imported profiler trace).
bool has_cpu_operator_ranges(Store& store, std::int64_t session_id, int rank);

}  // namespace shardscope::sessions
