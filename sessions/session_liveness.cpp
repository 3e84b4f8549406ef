#include "sessions/session_liveness.hpp"

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "sessions/sqlite_db.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::sessions {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 of /proc/PID/stat (starttime). The command name (field 2) may hold spaces and
// parentheses, so the fields are counted from its closing parenthesis.
std::string start_ticks(std::int64_t pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index)
    if (index == 22) return field;
  return "";
}


}  // namespace

ProcessIdentity local_process_identity(std::int64_t pid) {
  ProcessIdentity identity{host_name(), pid, ""};
  const std::string ticks = start_ticks(pid);
  if (!ticks.empty()) identity.start = first_line("/proc/sys/kernel/random/boot_id") + ":" + ticks;
  return identity;
}

ProcessIdentity this_process_identity() {
  // Cached per pid: a child forked without exec (tests, crash drills) is another writer.
  static std::mutex mutex;
  static ProcessIdentity cached;
  const std::lock_guard<std::mutex> lock(mutex);
  if (cached.pid != ::getpid()) cached = local_process_identity(::getpid());
  return cached;
}

bool writer_is_gone(const ProcessIdentity& writer) {
  if (writer.start.empty() || writer.pid <= 0 || writer.host != this_process_identity().host) return false;
  return local_process_identity(writer.pid).start != writer.start;
}

int mark_abandoned_sessions(SqliteDb& db) {
  std::vector<std::int64_t> abandoned;
  {
    Statement running(db, "SELECT id, writer_host, writer_pid, writer_start FROM sessions "
                          "WHERE status = 'running' AND writer_start IS NOT NULL");
    while (running.step()) {
      const ProcessIdentity writer{running.text(1), running.int64(2), running.text(3)};
      if (writer_is_gone(writer)) abandoned.push_back(running.int64(0));
    }
  }
  if (abandoned.empty()) return 0;
  Transaction transaction(db);
  // Re-checked under the write lock: the run may have recorded its end meanwhile.
  // It ended at its last recorded step, as far as anyone can know.
  Statement mark(db, "UPDATE sessions SET status = 'interrupted', ended_at = coalesce(ended_at, "
                     "(SELECT max(wall_time) FROM steps WHERE session_id = ?1)) WHERE id = ?1 AND status = 'running'");
  for (const auto id : abandoned) mark.bind(1, id).run();
  transaction.commit();
  return static_cast<int>(abandoned.size());
}

}  // namespace shardscope::sessions
