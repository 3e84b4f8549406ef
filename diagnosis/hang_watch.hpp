#pragma once
// The live side of hang detection: what the launcher keeps while a run streams its events. A run
// makes progress when a rank reports a step or a collective completes; when neither happens for
// hang_after seconds, check() returns the hang diagnosis of the marks seen (once per stall: new
// progress re-arms it). Time is passed in (the collector's clock at arrival), so a host's clock
// skew cannot fake or hide a stall, and tests need no sleeping.

#include <optional>
#include <vector>

#include "diagnosis/hang_diagnosis.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct HangWatchOptions {
  std::optional<double> hang_after_s;  ///< --hang-after; unset: max(floor_s, step_multiple x median step)
  double floor_s = 60;
  double step_multiple = 20;
  /// Before the first step or completed collective (model build, weight loading, rendezvous), the
  /// silence that counts is at least this: a slow start is not a hang.
  double first_progress_floor_s = 300;
};

class HangWatch {
 public:
  /// `started_at`: when the run started (progress is counted from there).
  HangWatch(HangWatchOptions options, double started_at);

  /// Takes in one event as it arrives at `now`: steps, collective marks, the run's ranks and hosts.
  void observe(const sessions::Event& event, double now);
  /// The silence that counts as a hang now: the option, or the default from the median step time
  /// (before any progress, at least first_progress_floor_s).
  double hang_after_s() const;
  /// The diagnosis once the run has made no progress for hang_after_s(); nullopt otherwise or
  /// when this stall was already reported.
  std::optional<sessions::Finding> check(double now);
  /// Unix seconds of the latest progress.
  double last_progress() const { return last_progress_; }

 private:
  HangWatchOptions options_;
  MarkBoard board_;
  RunPicture run_;
  std::vector<double> step_ms_;
  double last_progress_;
  bool progressed_ = false;
  bool reported_ = false;
};

}  // namespace shardscope::diagnosis
