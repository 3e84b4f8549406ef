#include "diagnosis/hang_watch.hpp"

#include <algorithm>

#include "diagnosis/robust_stats.hpp"

namespace shardscope::diagnosis {

HangWatch::HangWatch(HangWatchOptions options, double started_at)
    : options_(options), board_(256), last_progress_(started_at) {}

void HangWatch::observe(const sessions::Event& event, double now) {
  if (const auto* m = std::get_if<sessions::CollectiveMark>(&event)) {
    board_.add(*m);
    if (m->left_at) {
      last_progress_ = std::max(last_progress_, now);
      progressed_ = true;
      reported_ = false;
    }
  } else if (const auto* s = std::get_if<sessions::StepMetrics>(&event)) {
    last_progress_ = std::max(last_progress_, now);
    progressed_ = true;
    reported_ = false;
    run_.last_step[s->rank] = std::max(run_.last_step[s->rank], s->step);
    if (s->step_time_ms && step_ms_.size() < 100000) step_ms_.push_back(*s->step_time_ms);
  } else if (const auto* r = std::get_if<sessions::RunStart>(&event)) {
    run_.world_size = r->world_size;
    for (const auto& rank : r->ranks) run_.hosts[rank.rank] = rank.host;
  } else if (const auto* h = std::get_if<sessions::HostReport>(&event)) {
    for (const auto& rank : h->ranks) run_.hosts[rank.rank] = rank.host;
  }
}

double HangWatch::hang_after_s() const {
  double limit = 0;
  if (options_.hang_after_s) {
    limit = *options_.hang_after_s;
  } else {
    const double step_s = step_ms_.empty() ? 0 : median(step_ms_) / 1000.0;
    limit = std::max(options_.floor_s, options_.step_multiple * step_s);
  }
  return progressed_ ? limit : std::max(limit, options_.first_progress_floor_s);
}

std::optional<sessions::Finding> HangWatch::check(double now) {
  if (reported_ || now - last_progress_ < hang_after_s()) return std::nullopt;
  reported_ = true;
  RunPicture run = run_;
  run.now = now;
  sessions::Finding f = diagnose_hang(board_.marks(), run);
  f.evidence = "no step and no collective completed for " + std::to_string(static_cast<long long>(now - last_progress_)) +
               " s (the limit is " + std::to_string(static_cast<long long>(hang_after_s())) + " s)\n" + f.evidence;
  return f;
}

}  // namespace shardscope::diagnosis
