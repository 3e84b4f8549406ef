#include "diagnosis/stored_session.hpp"

#include <algorithm>
#include <chrono>

#include "diagnosis/session_review.hpp"
#include "sessions/doctor_records.hpp"

namespace shardscope::diagnosis {
namespace {

bool has_hang(const std::vector<sessions::Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const sessions::Finding& f) { return f.kind == "hang"; });
}

}  // namespace

std::vector<sessions::Finding> review_stored_session(sessions::Store& store, std::int64_t id,
                                                     const sessions::SessionDetail& d) {
  // Each table is read once in its primary key's order, and only what the doctor looks at: at
  // 1,024 ranks x 500 steps that is 0.5 M steps and 2.5 M timers (docs/benchmarks.md).
  SessionMaterial m;
  m.status = d.info.status;
  m.stored = sessions::load_findings(store, id);
  m.steps = sessions::load_step_numerics(store, id);
  m.timer_columns = sessions::load_timer_columns(store, id);
  m.run.world_size = d.info.world_size;
  for (const auto& r : d.ranks) m.run.hosts[r.info.rank] = r.info.host;
  // The marks (1 M at 1,024 ranks) and the ranks' last steps only serve a hang diagnosis, which
  // review_session makes only of a session that did not complete and stored no hang.
  if (m.status != "completed" && !has_hang(m.stored)) {
    m.marks = sessions::load_collective_marks(store, id);
    for (const auto& s : m.steps) m.run.last_step[s.rank] = std::max(m.run.last_step[s.rank], s.step);
  }
  // A session still running is judged as of now (a hang is silence up to now).
  m.run.now = d.info.ended_at ? *d.info.ended_at
                              : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return review_session(m);
}

}  // namespace shardscope::diagnosis
