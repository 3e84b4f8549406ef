#pragma once
// The live side of straggler detection: what the launcher keeps while a run streams its timers.
// After every new step that all ranks reported, flag_stragglers (stragglers.hpp) judges the latest
// window; a (rank, phase) it flags at `raise_after` consecutive steps becomes a "straggler" finding,
// and one that then no longer passes even half the thresholds (ratio and persistence) for
// `clear_after` steps becomes a "straggler_cleared" finding (the rank recovered). Both hysteresis
// keep a rank near the threshold from flapping and a few noisy steps from raising a flag.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "diagnosis/hang_diagnosis.hpp"
#include "diagnosis/stragglers.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct StragglerWatchOptions {
  /// The window and thresholds (stragglers.hpp). Live, every step is judged, so a flag must also
  /// be 17 % slower in median (not 15 %: judged at every step, the 20-step medians of clean runs
  /// with 8 % jitter reach 15 %), clearly slower most of the time (5 % slower than the peers in 80 %
  /// of the steps), over a window of 10 steps at least (a few noisy first steps are no straggler).
  StragglerOptions judge = live_judge();
  static StragglerOptions live_judge() {
    StragglerOptions o;
    o.min_ratio = 1.17;
    o.step_margin = 1.05;
    o.min_steps = 10;
    return o;
  }
  int raise_after = 2;     ///< consecutive steps flagged before it is raised
  int clear_after = 5;     ///< consecutive steps below the relaxed thresholds before it is cleared
};

class StragglerWatch {
 public:
  explicit StragglerWatch(StragglerWatchOptions options = {});

  /// Takes in one event: timers, and the run's ranks and hosts (for host:rank).
  void observe(const sessions::Event& event);
  /// New flags and clears since the last call (none unless a new step completed on every rank).
  std::vector<sessions::Finding> check(double now);
  /// The (rank, phase) pairs flagged now.
  const std::set<std::pair<int, std::string>>& flagged() const { return flagged_; }

 private:
  std::int64_t latest_complete_step() const;
  void forget_old_steps();
  void judge_through(std::int64_t last, double now, std::vector<sessions::Finding>& out);
  sessions::Finding cleared_finding(const std::pair<int, std::string>& key, std::int64_t step, double now);

  StragglerWatchOptions options_;
  RunPicture run_;
  std::map<std::int64_t, std::map<int, sessions::TimerBreakdown>> steps_;  ///< step -> rank -> timers
  std::set<int> ranks_;
  std::int64_t judged_step_ = 0;
  std::set<std::pair<int, std::string>> flagged_;
  std::map<std::pair<int, std::string>, int> flagged_for_;    ///< pairs not raised yet: consecutive steps flagged
  std::map<std::pair<int, std::string>, int> unflagged_for_;  ///< raised pairs: consecutive steps below the relaxed bar
  std::map<std::pair<int, std::string>, sessions::Finding> flag_of_;
};

}  // namespace shardscope::diagnosis
