#pragma once
// Reading what schema 4 added for runs ShardScope's engine did not record: named scalar series
// (SeriesPoint) and aggregate communication tables (CommSummary, DeepSpeed's log_summary).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::sessions {

class Store;

// load_series_names and load_series_curve live in session_reader.hpp, beside the timers' twins.
/// Every point of every series (or of one rank), by name, step, rank.
std::vector<SeriesPoint> load_series_points(Store& store, std::int64_t session_id,
                                            std::optional<int> rank = std::nullopt);
/// The aggregate communication rows, by rank, op, message size.
std::vector<CommSummary> load_comm_summaries(Store& store, std::int64_t session_id);

}  // namespace shardscope::sessions
