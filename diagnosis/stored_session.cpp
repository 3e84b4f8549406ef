#include "diagnosis/stored_session.hpp"

#include <algorithm>
#include <chrono>

#include "diagnosis/session_review.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/doctor_records.hpp"

namespace shardscope::diagnosis {

std::vector<sessions::Finding> review_stored_session(sessions::Store& store, std::int64_t id,
                                                     const sessions::SessionDetail& d) {
  SessionMaterial m;
  m.status = d.info.status;
  m.stored = sessions::load_findings(store, id);
  m.steps = sessions::load_steps(store, id);
  m.timers = sessions::load_timer_breakdowns(store, id);
  m.marks = sessions::load_collective_marks(store, id);
  m.run.world_size = d.info.world_size;
  for (const auto& r : d.ranks) m.run.hosts[r.info.rank] = r.info.host;
  for (const auto& s : m.steps) m.run.last_step[s.rank] = std::max(m.run.last_step[s.rank], s.step);
  // A session still running is judged as of now (a hang is silence up to now).
  m.run.now = d.info.ended_at ? *d.info.ended_at
                              : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return review_session(m);
}

}  // namespace shardscope::diagnosis
