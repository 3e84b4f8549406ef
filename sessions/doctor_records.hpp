#pragma once
// The run doctor's material in a session (schema 7): the ranks' latest collective marks and the
// findings made of them, and the steps' and timers' columns its after-the-fact review reads, each
// in one ordered scan of its table's primary key (no sort: 1,024 ranks x 500 steps is 2.5 M timer
// rows). Reading only; StoreWriter writes them from CollectiveMark, Finding, StepMetrics and
// TimerBreakdown events.

#include <cstdint>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// One rank's time of one timer at one step.
struct TimerSample {
  std::int64_t step = 0;
  int rank = 0;
  double ms = 0;
};

/// Every time of one named timer, by step then rank (at most one sample per step and rank).
struct TimerColumn {
  std::string name;
  std::vector<TimerSample> samples;
};

/// The findings of a session in the order they were made.
std::vector<Finding> load_findings(Store& store, std::int64_t session_id);
/// The collective marks the store keeps (the latest kCollectivesKept of each rank and group), by
/// rank, group and sequence.
std::vector<CollectiveMark> load_collective_marks(Store& store, std::int64_t session_id);
/// The steps with only what the numerics doctor reads (step, rank, loss, loss_scale, skipped), by
/// step then rank; the other fields are left unset.
std::vector<StepMetrics> load_step_numerics(Store& store, std::int64_t session_id);
/// Every timer of a session as one column per name, in the order of the names' ids.
std::vector<TimerColumn> load_timer_columns(Store& store, std::int64_t session_id);

}  // namespace shardscope::sessions
