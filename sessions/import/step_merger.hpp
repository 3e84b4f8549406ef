#pragma once
// One row per (rank, step) from several sources: the store keeps one StepMetrics row per rank and
// step (a later write replaces it), so the monitor's exact values and the log's extra fields are
// merged first. Monitor values (csv_monitor, TensorBoard) are authoritative; the log fills gaps.
// DeepSpeed (and the Trainer under it) report the learning rate and loss scale after the step, as
// the next step's: sources add them at that next step, and a row holding nothing else is kept
// back until a later step of its rank shows that it ran (the row after the run's last step never
// does, so it is never sent).

#include <cstdint>
#include <functional>
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
  /// Every merged row that ran (step order, then rank).
  std::vector<Event> all() const;
  /// The same rows handed to `take` a batch of at most about `batch` events at a time (an Event is
  /// about 1 KB: a 64-rank import of 1,550 steps each would hold 100 MB of them at once).
  void each_batch(std::size_t batch, const std::function<void(std::vector<Event>&)>& take) const;
  /// The rows that ran (all() has as many).
  std::size_t size() const;

 private:
  struct Row {
    StepMetrics metrics;
    std::map<std::string, double> timers;
    bool has_metrics = false;
  };
  static void emit(const Row& row, std::vector<Event>& out);
  /// False for a row of only next-step values (lr, loss scale) with no later step of its rank.
  bool ran(const std::pair<std::int64_t, int>& key) const;

  std::map<std::pair<std::int64_t, int>, Row> rows_;  ///< (step, rank)
  std::set<std::pair<std::int64_t, int>> changed_;
};

}  // namespace shardscope::sessions
