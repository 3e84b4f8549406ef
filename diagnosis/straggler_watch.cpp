#include "diagnosis/straggler_watch.hpp"

#include <algorithm>

namespace shardscope::diagnosis {

StragglerWatch::StragglerWatch(StragglerWatchOptions options) : options_(options) {}

void StragglerWatch::observe(const sessions::Event& event) {
  if (const auto* t = std::get_if<sessions::TimerBreakdown>(&event)) {
    if (t->step <= judged_step_ - options_.judge.window) return;  // a straggling report of a step long gone
    steps_[t->step][t->rank] = *t;
    ranks_.insert(t->rank);
  } else if (const auto* r = std::get_if<sessions::RunStart>(&event)) {
    run_.world_size = r->world_size;
    for (const auto& rank : r->ranks) run_.hosts[rank.rank] = rank.host;
  } else if (const auto* h = std::get_if<sessions::HostReport>(&event)) {
    for (const auto& rank : h->ranks) run_.hosts[rank.rank] = rank.host;
  }
}

// The latest step every rank seen so far reported.
std::int64_t StragglerWatch::latest_complete_step() const {
  const std::size_t world = std::max<std::size_t>(ranks_.size(), static_cast<std::size_t>(std::max(run_.world_size, 0)));
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->second.size() >= world) return it->first;
  return 0;
}

// Twice the window is kept: enough for the window of complete steps while some rank lags behind.
void StragglerWatch::forget_old_steps() {
  const std::int64_t keep_from = judged_step_ - 2 * static_cast<std::int64_t>(options_.judge.window);
  while (!steps_.empty() && steps_.begin()->first <= keep_from) steps_.erase(steps_.begin());
}

std::vector<sessions::Finding> StragglerWatch::check(double now) {
  std::vector<sessions::Finding> out;
  const std::int64_t complete = latest_complete_step();
  if (complete <= judged_step_ || ranks_.size() < 2) return out;
  // Each new step is judged on its own window, so a flag names the step it was due at however
  // many steps arrived between two checks.
  for (std::int64_t step = std::max(judged_step_ + 1, complete - options_.judge.window); step <= complete; ++step)
    judge_through(step, now, out);
  judged_step_ = complete;
  forget_old_steps();
  return out;
}

void StragglerWatch::judge_through(std::int64_t last, double now, std::vector<sessions::Finding>& out) {
  std::vector<sessions::TimerBreakdown> timers;
  for (const auto& [step, by_rank] : steps_) {
    if (step > last) break;
    for (const auto& [rank, t] : by_rank) timers.push_back(t);
  }
  std::set<std::pair<int, std::string>> seen, still;
  for (auto& flag : flag_stragglers(timers, run_, options_.judge)) {
    const auto key = std::make_pair(flag.rank, flag.phase);
    seen.insert(key);
    if (flagged_.count(key) || ++flagged_for_[key] < options_.raise_after) continue;
    flag.finding.found_at = now;
    flag_of_[key] = flag.finding;
    flagged_.insert(key);
    out.push_back(std::move(flag.finding));
  }
  for (auto it = flagged_for_.begin(); it != flagged_for_.end();)
    it = seen.count(it->first) && !flagged_.count(it->first) ? std::next(it) : flagged_for_.erase(it);
  if (flagged_.empty()) return;
  StragglerOptions relaxed = options_.judge;
  relaxed.min_ratio = 1 + (relaxed.min_ratio - 1) / 2;
  relaxed.min_gap_ms /= 2;
  relaxed.persistence = 0.5 + (relaxed.persistence - 0.5) / 2;
  for (const auto& flag : flag_stragglers(timers, run_, relaxed)) still.insert({flag.rank, flag.phase});
  for (auto it = flagged_.begin(); it != flagged_.end();) {
    if (still.count(*it)) unflagged_for_[*it] = 0;
    if (still.count(*it) || ++unflagged_for_[*it] < options_.clear_after) {
      ++it;
      continue;
    }
    out.push_back(cleared_finding(*it, last, now));
    unflagged_for_.erase(*it);
    flag_of_.erase(*it);
    it = flagged_.erase(it);
  }
}

sessions::Finding StragglerWatch::cleared_finding(const std::pair<int, std::string>& key, std::int64_t step,
                                                  double now) {
  sessions::Finding cleared;
  cleared.kind = "straggler_cleared";
  cleared.severity = "info";
  cleared.ranks = {key.first};
  cleared.first_step = flag_of_[key].first_step;
  cleared.last_step = step;
  cleared.summary = host_rank(run_, key.first) + " caught up in " + key.second + " by step " + std::to_string(step) +
                    " (flagged: " + flag_of_[key].summary + ")";
  cleared.found_at = now;
  return cleared;
}

}  // namespace shardscope::diagnosis
