#pragma once
// Stragglers: a rank whose step, or one local phase of it, is persistently slower than its peers'.
//
// In data parallel training every rank waits for the slowest at each collective, so whole-step
// times look alike and the victims' collective waits grow: a straggler shows in the phases a rank
// does alone (forward, backward_inner, step, data wait), never in the waits. Over the latest
// `window` steps that every rank reported, a rank is flagged when its median time of a phase
// exceeds its peers' median by `min_ratio` and `min_gap_ms`, and it was the slower one in at
// least `persistence` of those steps.

#include <vector>

#include "diagnosis/hang_diagnosis.hpp"
#include "sessions/doctor_records.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct StragglerOptions {
  int window = 20;           ///< steps looked at (the latest ones every rank reported)
  double min_ratio = 1.15;   ///< slower than the peers' median by this factor ...
  double min_gap_ms = 1.0;   ///< ... and by at least this much
  double persistence = 0.8;  ///< in at least this share of the window's steps ...
  double step_margin = 1.0;  ///< ... being slower than the peers' median of that step by this factor
  int min_steps = 5;         ///< fewer complete steps than this (or the window) are not judged
};

/// Whether a timer is a wait on other ranks (all-reduce, gather, comm); those are never blamed.
bool is_collective_wait(const std::string& timer);

/// A rank and phase flagged, with its finding.
struct StragglerFlag {
  int rank = 0;
  std::string phase;
  double own_ms = 0, peers_ms = 0;  ///< the medians compared
  sessions::Finding finding;
};

/// Every rank and phase flagged over the latest window; none for a clean run.
std::vector<StragglerFlag> flag_stragglers(const std::vector<sessions::TimerBreakdown>& timers, const RunPicture& run,
                                           const StragglerOptions& options = {});
/// The same judgement of timers read as columns (sessions::load_timer_columns: each by step then
/// rank, one sample per step and rank), as a stored session's review reads them.
std::vector<StragglerFlag> flag_stragglers(const std::vector<sessions::TimerColumn>& columns, const RunPicture& run,
                                           const StragglerOptions& options = {});

/// One finding ("straggler", warning) per rank and phase flagged; none for a clean run.
std::vector<sessions::Finding> find_stragglers(const std::vector<sessions::TimerBreakdown>& timers,
                                               const RunPicture& run, const StragglerOptions& options = {});

}  // namespace shardscope::diagnosis
