#include "sessions/profile_reader.hpp"

#include <utility>

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {

std::vector<TimerBreakdown> load_timer_breakdowns(Store& store, std::int64_t session_id, std::optional<int> rank) {
  Statement s(store.db(), rank ? "SELECT t.rank, t.step, n.text, t.ms FROM timers t JOIN names n ON n.id = t.name_id "
                                 "WHERE t.session_id = ?1 AND t.rank = ?2 ORDER BY t.rank, t.step, n.text"
                               : "SELECT t.rank, t.step, n.text, t.ms FROM timers t JOIN names n ON n.id = t.name_id "
                                 "WHERE t.session_id = ?1 ORDER BY t.rank, t.step, n.text");
  s.bind(1, session_id);
  if (rank) s.bind(2, *rank);
  std::vector<TimerBreakdown> out;
  while (s.step()) {
    const int r = static_cast<int>(s.int64(0));
    const std::int64_t step = s.int64(1);
    if (out.empty() || out.back().rank != r || out.back().step != step) out.push_back({r, step, {}});
    out.back().timers.push_back({s.text(2), s.real(3)});
  }
  return out;
}

std::vector<CommRecord> load_comm_records(Store& store, std::int64_t session_id, std::optional<int> rank) {
  Statement s(store.db(), rank ? "SELECT rank, step, op, bytes, latency_us, algbw_gbps, busbw_gbps, group_size "
                                 "FROM comms WHERE session_id = ?1 AND rank = ?2 ORDER BY rank, step, id"
                               : "SELECT rank, step, op, bytes, latency_us, algbw_gbps, busbw_gbps, group_size "
                                 "FROM comms WHERE session_id = ?1 ORDER BY rank, step, id");
  s.bind(1, session_id);
  if (rank) s.bind(2, *rank);
  std::vector<CommRecord> out;
  while (s.step())
    out.push_back({static_cast<int>(s.int64(0)), s.int64(1), s.text(2), s.int64(3), s.real(4),
                   s.optional_real(5).value_or(0), s.optional_real(6).value_or(0),
                   static_cast<int>(s.optional_int64(7).value_or(0))});
  return out;
}

std::vector<ActivityRecord> load_activity_details(Store& store, std::int64_t session_id, int rank) {
  Statement s(store.db(), "SELECT a.kind, n.text, a.start_ns, a.end_ns, a.device, a.stream, a.bytes, a.step, "
                          "a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z, a.registers_per_thread, "
                          "a.correlation_id, a.throughput_gbps FROM activities a JOIN names n ON n.id = a.name_id "
                          "WHERE a.session_id = ? AND a.rank = ? ORDER BY a.start_ns");
  s.bind(1, session_id).bind(2, rank);
  auto dim = [&s](int first) -> std::optional<Dim3> {
    if (s.is_null(first)) return std::nullopt;
    return Dim3{static_cast<int>(s.int64(first)), static_cast<int>(s.int64(first + 1)),
                static_cast<int>(s.int64(first + 2))};
  };
  std::vector<ActivityRecord> out;
  while (s.step()) {
    ActivityRecord a{static_cast<ActivityKind>(s.int64(0)), s.text(1), s.int64(2), s.int64(3),
                     static_cast<int>(s.int64(4)), s.int64(5), s.int64(6), s.int64(7)};
    a.grid = dim(8);
    a.block = dim(11);
    if (auto r = s.optional_int64(14)) a.registers_per_thread = static_cast<int>(*r);
    a.correlation_id = s.optional_int64(15);
    a.throughput_gbps = s.optional_real(16);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<int> load_activity_ranks(Store& store, std::int64_t session_id) {
  // One probe of the (session_id, rank, start_ns) index per rank instead of a DISTINCT over rows.
  std::vector<int> out;
  Statement s(store.db(), "SELECT rank FROM activities WHERE session_id = ?1 AND rank > ?2 ORDER BY rank LIMIT 1");
  std::int64_t last = -1;
  for (;;) {
    s.bind(1, session_id).bind(2, last);
    if (!s.step()) break;
    last = s.int64(0);
    out.push_back(static_cast<int>(last));
    s.reset();
  }
  return out;
}

bool has_cpu_operator_ranges(Store& store, std::int64_t session_id, int rank) {
  Statement s(store.db(), "SELECT 1 FROM nvtx_ranges WHERE session_id = ? AND rank = ? AND domain = ? LIMIT 1");
  s.bind(1, session_id).bind(2, rank).bind(3, std::string(kCpuOpDomain));
  return s.step();
}

}  // namespace shardscope::sessions
