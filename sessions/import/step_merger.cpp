#include "sessions/import/step_merger.hpp"

#include <algorithm>

namespace shardscope::sessions {
namespace {

template <typename T>
void merge_field(std::optional<T>& into, const std::optional<T>& from, bool authoritative) {
  if (from && (authoritative || !into)) into = from;
}

void merge_metrics(StepMetrics& into, const StepMetrics& from, bool authoritative) {
  merge_field(into.step_time_ms, from.step_time_ms, authoritative);
  merge_field(into.loss, from.loss, authoritative);
  merge_field(into.lr, from.lr, authoritative);
  merge_field(into.loss_scale, from.loss_scale, authoritative);
  merge_field(into.grad_norm, from.grad_norm, authoritative);
  merge_field(into.samples_per_s, from.samples_per_s, authoritative);
  merge_field(into.tokens_per_s, from.tokens_per_s, authoritative);
  merge_field(into.tflops, from.tflops, authoritative);
  merge_field(into.mem_allocated_bytes, from.mem_allocated_bytes, authoritative);
  merge_field(into.mem_reserved_bytes, from.mem_reserved_bytes, authoritative);
  merge_field(into.mem_peak_bytes, from.mem_peak_bytes, authoritative);
  into.skipped = into.skipped || from.skipped;
  into.wall_time = std::max(into.wall_time, from.wall_time);
}

// Only what DeepSpeed reports after a step for the next one: the row alone does not show it ran.
bool only_next_step_values(const StepMetrics& m, bool has_timers) {
  return !has_timers && !m.skipped && !m.step_time_ms && !m.loss && !m.grad_norm && !m.samples_per_s &&
         !m.tokens_per_s && !m.tflops && !m.mem_allocated_bytes && !m.mem_reserved_bytes && !m.mem_peak_bytes &&
         (m.lr || m.loss_scale);
}

}  // namespace

bool StepMerger::ran(const std::pair<std::int64_t, int>& key) const {
  const Row& row = rows_.at(key);
  if (!only_next_step_values(row.metrics, !row.timers.empty())) return true;
  for (auto it = rows_.upper_bound(key); it != rows_.end(); ++it)
    if (it->first.second == key.second) return true;
  return false;
}

void StepMerger::add(const Event& event, bool authoritative) {
  if (const auto* m = std::get_if<StepMetrics>(&event)) {
    const auto key = std::make_pair(m->step, m->rank);
    Row& row = rows_[key];
    row.metrics.rank = m->rank;
    row.metrics.step = m->step;
    merge_metrics(row.metrics, *m, authoritative);
    row.has_metrics = true;
    changed_.insert(key);
  } else if (const auto* t = std::get_if<TimerBreakdown>(&event)) {
    const auto key = std::make_pair(t->step, t->rank);
    Row& row = rows_[key];
    row.metrics.rank = t->rank;
    row.metrics.step = t->step;
    for (const auto& timer : t->timers)
      if (authoritative || !row.timers.count(timer.name)) row.timers[timer.name] = timer.ms;
    changed_.insert(key);
  }
}

void StepMerger::emit(const Row& row, std::vector<Event>& out) {
  StepMetrics metrics = row.metrics;
  // DeepSpeed's iter latency from the merged timers: sources may bring a step's timers in pieces
  // (a live csv_monitor poll can see forward.csv's row before step.csv's).
  const auto f = row.timers.find("forward"), b = row.timers.find("backward"), s = row.timers.find("step");
  if (f != row.timers.end() && b != row.timers.end() && s != row.timers.end())
    metrics.step_time_ms = f->second + b->second + s->second;
  if (!row.timers.empty()) {
    TimerBreakdown t{row.metrics.rank, row.metrics.step, {}};
    for (const auto& [name, ms] : row.timers) t.timers.push_back({name, ms});
    out.push_back(std::move(t));
  }
  if (row.has_metrics || metrics.step_time_ms) out.push_back(metrics);  // after its timers, as the engine sends them
}

std::vector<Event> StepMerger::take_changed() {
  std::vector<Event> out;
  std::set<std::pair<std::int64_t, int>> held;
  for (const auto& key : changed_) {
    if (ran(key)) emit(rows_.at(key), out);
    else held.insert(key);
  }
  changed_.swap(held);
  return out;
}

std::size_t StepMerger::size() const {
  std::size_t n = 0;
  for (const auto& entry : rows_) n += ran(entry.first) ? 1 : 0;
  return n;
}

std::vector<Event> StepMerger::all() const {
  std::vector<Event> out;
  for (const auto& [key, row] : rows_)
    if (ran(key)) emit(row, out);
  return out;
}

void StepMerger::each_batch(std::size_t batch, const std::function<void(std::vector<Event>&)>& take) const {
  std::vector<Event> out;
  for (const auto& [key, row] : rows_) {
    if (ran(key)) emit(row, out);
    if (out.size() >= batch) take(out), out.clear();
  }
  if (!out.empty()) take(out);
}

}  // namespace shardscope::sessions
