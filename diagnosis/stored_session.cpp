#include "diagnosis/stored_session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <tuple>

#include "diagnosis/session_review.hpp"
#include "sessions/doctor_records.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::diagnosis {
namespace {

bool has_hang(const std::vector<sessions::Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const sessions::Finding& f) { return f.kind == "hang"; });
}

// The marks and the ranks' last steps only serve a hang diagnosis, which review_session makes
// only of a session that did not complete and stored no hang.
bool may_hang(const SessionMaterial& m) { return m.status != "completed" && !has_hang(m.stored); }

// Each table is read once in its primary key's order, and only what the doctor looks at: at
// 1,024 ranks x 500 steps that is 0.5 M steps and 2.5 M timers (docs/benchmarks.md).
void read_every_row(sessions::Store& store, std::int64_t id, SessionMaterial& m) {
  m.steps = sessions::load_step_numerics(store, id);
  m.timer_columns = sessions::load_timer_columns(store, id);
  if (!may_hang(m)) return;
  m.marks = sessions::load_collective_marks(store, id);
  for (const auto& s : m.steps) m.run.last_step[s.rank] = std::max(m.run.last_step[s.rank], s.step);
}

bool finite_bound(const std::optional<double>& v) { return !v || std::isfinite(*v); }

// A step as the numerics rules see it. The aggregate gives the mean of finite losses; a ±Inf
// loss (SQLite keeps it, unlike NaN) hides the finite ones' sum, so that step's rows are read.
StepNumerics fold_step(sessions::Store& store, std::int64_t id, const sessions::StepLossStats& s) {
  if (!finite_bound(s.loss_min) || !finite_bound(s.loss_max) || (s.loss_n > 0 && !s.loss_sum)) {
    auto folded = step_numerics(sessions::load_step_numerics_at(store, id, s.step));
    if (!folded.empty()) return folded.front();
  }
  StepNumerics v;
  v.step = s.step;
  v.skipped = s.skipped > 0;
  v.loss_scale = s.loss_scale_min;
  if (s.loss_n > 0 && s.loss_sum) v.mean_loss = *s.loss_sum / static_cast<double>(s.loss_n);
  return v;
}

// The samples the straggler rule judges: per timer, the latest `window` steps at which the most
// ranks reported (complete steps, when every rank that reported a timer is in the fullest step).
std::vector<sessions::TimerColumn> load_straggler_window(sessions::Store& store, std::int64_t id, int window) {
  const auto timers = sessions::load_timer_step_counts(store, id);
  std::int64_t fullest = 0;
  for (const auto& t : timers)
    for (const auto& [step, ranks] : t.steps) fullest = std::max(fullest, ranks);
  std::vector<sessions::TimerColumn> columns;
  for (const auto& t : timers) {
    std::vector<std::int64_t> steps;
    for (auto it = t.steps.rbegin(); it != t.steps.rend() && static_cast<int>(steps.size()) < window; ++it)
      if (it->second == fullest) steps.push_back(it->first);
    std::reverse(steps.begin(), steps.end());
    columns.push_back(sessions::load_timer_column_at(store, id, t.name_id, t.name, steps));
  }
  return columns;
}

bool key_less(const sessions::MarkKey& a, const sessions::MarkKey& b) {
  return std::tie(a.rank, a.group, a.sequence) < std::tie(b.rank, b.group, b.sequence);
}
bool key_equal(const sessions::MarkKey& a, const sessions::MarkKey& b) {
  return std::tie(a.rank, a.group, a.sequence) == std::tie(b.rank, b.group, b.sequence);
}

// The marks at `keys` in the primary key's order, each once: the order diagnose_hang's ties follow.
std::vector<sessions::CollectiveMark> load_marks_once(sessions::Store& store, std::int64_t id,
                                                      std::vector<sessions::MarkKey> keys) {
  std::sort(keys.begin(), keys.end(), key_less);
  keys.erase(std::unique(keys.begin(), keys.end(), key_equal), keys.end());
  return sessions::load_marks_at(store, id, keys);
}

// The collective diagnose_hang targets: the lowest open sequence in the group of the oldest open mark.
std::optional<sessions::MarkKey> hang_target(const std::vector<sessions::CollectiveMark>& marks) {
  const sessions::CollectiveMark* oldest = nullptr;
  for (const auto& m : marks)
    if (!m.left_at && (!oldest || m.entered_at < oldest->entered_at)) oldest = &m;
  if (!oldest) return std::nullopt;
  sessions::MarkKey target{oldest->rank, oldest->group, oldest->sequence};
  for (const auto& m : marks)
    if (!m.left_at && m.group == target.group) target.sequence = std::min(target.sequence, m.sequence);
  return target;
}

// Of the 1,024 marks kept per rank and group, only those diagnose_hang reads: each rank's latest,
// latest completed and open ones, the first naming the group's members, and every rank's at the
// target collective. The same diagnosis from a few per rank instead of 1 M rows at 1,024 ranks.
std::vector<sessions::CollectiveMark> load_hang_marks(sessions::Store& store, std::int64_t id) {
  const auto ends = sessions::load_mark_ends(store, id);
  std::vector<sessions::MarkKey> keys;
  for (const auto& e : ends) {
    keys.push_back({e.rank, e.group, e.latest});
    if (e.latest_done) keys.push_back({e.rank, e.group, *e.latest_done});
    if (e.first_with_members) keys.push_back({e.rank, e.group, *e.first_with_members});
    for (const auto sequence : e.open) keys.push_back({e.rank, e.group, sequence});
  }
  auto marks = load_marks_once(store, id, keys);
  const auto target = hang_target(marks);
  if (!target) return marks;
  for (const auto& e : ends)
    if (e.group == target->group) keys.push_back({e.rank, e.group, target->sequence});
  return load_marks_once(store, id, keys);
}

void read_aggregates(sessions::Store& store, std::int64_t id, SessionMaterial& m) {
  for (const auto& s : sessions::load_step_loss_stats(store, id)) m.step_numerics.push_back(fold_step(store, id, s));
  m.timer_columns = load_straggler_window(store, id, StragglerOptions{}.window);
  if (!may_hang(m)) return;
  m.marks = load_hang_marks(store, id);
  m.run.last_step = sessions::load_last_steps(store, id);
}

}  // namespace

std::vector<sessions::Finding> review_stored_session(sessions::Store& store, std::int64_t id,
                                                     const sessions::SessionDetail& d,
                                                     const StoredReviewOptions& options) {
  SessionMaterial m;
  m.status = d.info.status;
  m.stored = sessions::load_findings(store, id);
  m.run.world_size = d.info.world_size;
  for (const auto& r : d.ranks) m.run.hosts[r.info.rank] = r.info.host;
  if (sessions::has_stats(store) && sessions::count_doctor_rows(store, id) > options.full_read_rows)
    read_aggregates(store, id, m);
  else
    read_every_row(store, id, m);
  // A session still running is judged as of now (a hang is silence up to now).
  m.run.now = d.info.ended_at ? *d.info.ended_at
                              : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return review_session(m);
}

}  // namespace shardscope::diagnosis
