#include "sessions/series_reader.hpp"

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {

std::vector<SeriesPoint> load_series_points(Store& store, std::int64_t session_id, std::optional<int> rank) {
  Statement s(store.db(), rank ? "SELECT n.text, x.step, x.rank, x.value FROM series x JOIN names n ON n.id = x.name_id "
                                 "WHERE x.session_id = ?1 AND x.rank = ?2 ORDER BY n.text, x.step"
                               : "SELECT n.text, x.step, x.rank, x.value FROM series x JOIN names n ON n.id = x.name_id "
                                 "WHERE x.session_id = ?1 ORDER BY n.text, x.step, x.rank");
  s.bind(1, session_id);
  if (rank) s.bind(2, *rank);
  std::vector<SeriesPoint> out;
  while (s.step()) out.push_back({static_cast<int>(s.int64(2)), s.int64(1), s.text(0), s.real(3)});
  return out;
}

std::vector<CommSummary> load_comm_summaries(Store& store, std::int64_t session_id) {
  Statement s(store.db(), "SELECT rank, op, message_bytes, count, total_latency_ms, avg_latency_ms, algbw_gbps, "
                          "busbw_gbps FROM comm_summaries WHERE session_id = ? ORDER BY rank, op, message_bytes, id");
  s.bind(1, session_id);
  std::vector<CommSummary> out;
  while (s.step())
    out.push_back({static_cast<int>(s.int64(0)), s.text(1), s.int64(2), s.int64(3), s.real(4),
                   s.optional_real(5).value_or(0), s.optional_real(6).value_or(0), s.optional_real(7).value_or(0)});
  return out;
}

}  // namespace shardscope::sessions
