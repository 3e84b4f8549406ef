#pragma once
// One row per (rank, step) from several sources: the store keeps one StepMetrics row per rank and
// step (a later write replaces it), so the monitor's exact values and the log's extra fields are
// merged first. Monitor values (csv_monitor, TensorBoard) are authoritative; the log fills gaps.

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class StepMerger {
 public:
  /// Adds a StepMetrics or TimerBreakdown (other events are ignored). `authoritative` values
  /// replace what is there; the others only fill fields that are still unset.
  void add(const Event& event, bool authoritative);
  /// The merged rows changed since the last call, as StepMetrics and TimerBreakdown events; a row
  /// with forward, backward and step timers gets step_time_ms = their sum (DeepSpeed's iter latency).
  std::vector<Event> take_changed();
  /// Every merged row (step order, then rank).
  std::vector<Event> all() const;
  std::size_t size() const { return rows_.size(); }

 private:
  struct Row {
    StepMetrics metrics;
    std::map<std::string, double> timers;
    bool has_metrics = false;
  };
  static void emit(const Row& row, std::vector<Event>& out);

  std::map<std::pair<std::int64_t, int>, Row> rows_;  ///< (step, rank)
  std::set<std::pair<std::int64_t, int>> changed_;
};

}  // namespace shardscope::sessions
