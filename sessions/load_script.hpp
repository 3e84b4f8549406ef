#pragma once
// What `shardscope-load` plays (docs/benchmarks.md, "shardscope-load"): the events each rank of a
// run sends at each of its steps, in the order a rank sends them. Two sources of the same shape:
// a recorded session read back from a session file (its first few ranks, replayed as many), or a
// synthetic run made on the fly (the engine's per-step events plus a profiled window).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

class Store;

/// The events of a run, step by step, for any number of ranks.
class LoadScript {
 public:
  virtual ~LoadScript() = default;
  /// Appends what rank `rank` of a `world_size`-rank run sends during its `index`-th step (0-based):
  /// collective marks, log lines, StepMetrics, timers, collective records, and in the profiled
  /// window its kernel, memcpy and NVTX batches. Every event names `rank`.
  virtual void step_events(int rank, int world_size, std::int64_t index, std::vector<Event>& out) const = 0;
  /// How long rank `rank`'s `index`-th step took when it was recorded, ms (0 when unknown).
  virtual double recorded_step_ms(int rank, std::int64_t index) const = 0;
  /// What the launcher announces at the start: the run's name, config and environment, and its ranks.
  virtual RunStart run_start(int world_size) const = 0;
  /// One line for the report's header ("synthetic: ...", "session 3 'gpt2-z2' of demo.db: ...").
  virtual std::string describe() const = 0;
};

/// The shape of a synthetic run. The defaults are the engine's per-step events with
/// wall_clock_breakdown on and ZeRO-2's three collectives per step, traced by the flight record.
struct SyntheticRunOptions {
  std::int64_t window_step = 100;  ///< the step index whose end ships the profiled window; -1: none
  int kernels = 100000;            ///< activity records of one profiled rank's window (1 in 10 a memcpy)
  int profiled_ranks = 1;          ///< ranks 0 .. profiled_ranks-1 ship a window
  int log_every = 10;              ///< a log line every this many steps (0: none)
  double step_ms = 250;            ///< the recorded step time a --recorded-pace replay waits
};

/// A synthetic run (records per rank and step: 6 collective marks, 5 timers, 3 collective records,
/// one StepMetrics, and a log line every log_every steps).
std::unique_ptr<LoadScript> make_synthetic_script(const SyntheticRunOptions& options);

/// How much of a recorded session to replay.
struct RecordedRunOptions {
  int source_ranks = 8;  ///< the first this many ranks are read; rank r replays rank r % source_ranks
};

/// A recorded session of `store` (its steps, timers, collective records and marks, profiled window,
/// NVTX ranges and log lines), replayed from its first step; past its last step it starts again, with
/// steps, collective sequence numbers and times moved on by one recorded run each lap. Throws
/// SessionsError(kInvalidArgument) naming the session when it has no step rows to replay.
std::unique_ptr<LoadScript> read_recorded_script(Store& store, std::int64_t session_id,
                                                 const RecordedRunOptions& options = {});

}  // namespace shardscope::sessions
