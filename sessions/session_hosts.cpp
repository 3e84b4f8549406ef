// The hosts of a session (SessionHost in session_reader.hpp): what launchers reported in
// HostReport events, joined with the hosts the ranks table names.
#include <algorithm>
#include <map>

#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {

std::vector<SessionHost> load_session_hosts(Store& store, std::int64_t session_id) {
  SqliteDb& db = store.db();
  std::map<std::string, SessionHost> by_name;
  Statement h(db, "SELECT host, node_rank, clock_offset_s, clock_uncertainty_s, shardscope_version, git_hash "
                  "FROM hosts WHERE session_id = ?");
  h.bind(1, session_id);
  while (h.step()) {
    SessionHost& host = by_name[h.text(0)];
    host.host = h.text(0);
    if (auto node = h.optional_int64(1)) host.node_rank = static_cast<int>(*node);
    host.clock_offset_s = h.optional_real(2);
    host.clock_uncertainty_s = h.optional_real(3);
    host.shardscope_version = h.text(4);
    host.git_hash = h.text(5);
  }
  Statement r(db, "SELECT rank, host FROM ranks WHERE session_id = ? AND host IS NOT NULL AND host != '' ORDER BY rank");
  r.bind(1, session_id);
  while (r.step()) {
    SessionHost& host = by_name[r.text(1)];
    host.host = r.text(1);
    host.ranks.push_back(static_cast<int>(r.int64(0)));
  }
  std::vector<SessionHost> hosts;
  for (auto& [name, host] : by_name) hosts.push_back(std::move(host));
  std::stable_sort(hosts.begin(), hosts.end(), [](const SessionHost& a, const SessionHost& b) {
    return a.node_rank.value_or(1 << 30) < b.node_rank.value_or(1 << 30);
  });
  return hosts;
}

double rank_clock_offset_s(const std::vector<SessionHost>& hosts, int rank) {
  for (const auto& host : hosts)
    if (std::find(host.ranks.begin(), host.ranks.end(), rank) != host.ranks.end()) return host.clock_offset_s.value_or(0);
  return 0;
}

}  // namespace shardscope::sessions
