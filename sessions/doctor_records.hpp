#pragma once
// The run doctor's material in a session (schema 7): the ranks' latest collective marks and the
// findings made of them, and the steps' and timers' columns its after-the-fact review reads, each
// in one ordered scan of its table's primary key (no sort: 1,024 ranks x 500 steps is 2.5 M timer
// rows). Reading only; StoreWriter writes them from CollectiveMark, Finding, StepMetrics and
// TimerBreakdown events.

#include <cstdint>
#include <map>
#include <optional>
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

// What a large session's review reads instead of every row (schema 10's pre-aggregates, filled
// at commit, then a few ranges of the primary keys): O(steps) + O(ranks x a window).

/// One step's steps rows folded (step_stats): what the numerics doctor needs of a step whose
/// losses are all finite. ±Inf is stored as itself, so it shows in loss_min or loss_max.
struct StepLossStats {
  std::int64_t step = 0;
  std::int64_t skipped = 0;          ///< ranks that skipped it
  std::int64_t loss_n = 0;           ///< ranks with a loss (NaN is stored as NULL: not counted)
  std::optional<double> loss_sum, loss_min, loss_max, loss_scale_min;
};

/// Every step of a session from step_stats, by step.
std::vector<StepLossStats> load_step_loss_stats(Store& store, std::int64_t session_id);
/// The rows of one step as load_step_numerics reads them, by rank (one range of the primary key).
std::vector<StepMetrics> load_step_numerics_at(Store& store, std::int64_t session_id, std::int64_t step);
/// Steps and timer rows the store holds for a session, from the pre-aggregates.
std::int64_t count_doctor_rows(Store& store, std::int64_t session_id);

/// How many ranks reported a timer at each step (timer_stats), by step.
struct TimerStepCounts {
  std::int64_t name_id = 0;
  std::string name;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  ///< (step, ranks)
};

/// Every named timer of a session, in the order of the names' ids.
std::vector<TimerStepCounts> load_timer_step_counts(Store& store, std::int64_t session_id);
/// The samples of timer `name_id` at `steps` (ascending), as a column named `name`.
TimerColumn load_timer_column_at(Store& store, std::int64_t session_id, std::int64_t name_id, const std::string& name,
                                 const std::vector<std::int64_t>& steps);
/// One rank's marks in one group, summed up in one pass over them (the marks a hang diagnosis
/// reads: the latest, the latest completed, those still open, the first naming the group).
struct MarkEnds {
  int rank = 0;
  std::string group;
  std::int64_t latest = 0;
  std::optional<std::int64_t> latest_done;
  std::vector<std::int64_t> open;               ///< sequences still waited in
  std::optional<std::int64_t> first_with_members;  ///< the first whose group_ranks is stored
};
/// Every rank's and group's MarkEnds, by rank then group.
std::vector<MarkEnds> load_mark_ends(Store& store, std::int64_t session_id);

/// A mark's key in the collectives table.
struct MarkKey {
  int rank = 0;
  std::string group;
  std::int64_t sequence = 0;
};
/// The marks at `keys` that exist, in the order of `keys` (a seek of the primary key each).
std::vector<CollectiveMark> load_marks_at(Store& store, std::int64_t session_id, const std::vector<MarkKey>& keys);

/// Each rank's latest step, for the ranks rank_stats holds (a seek of steps_by_rank per rank).
std::map<int, std::int64_t> load_last_steps(Store& store, std::int64_t session_id);

}  // namespace shardscope::sessions
