#pragma once
// DeepSpeed's SynchronizedWallClockTimer (utils/timer.py, wall_clock_breakdown) without torch:
// named timers that accumulate intervals until read, a 10 % trimmed mean, and the exact
// "time (ms) | fwd_microstep: 12.34 | ..." log line.
//
// Two clocks. Host: steady_clock (or an injected clock, for tests). CUDA: start and stop record a
// CUDA event on the stream given to start(), so timing never blocks the host or the GPU; the
// intervals are resolved lazily when read (at the step boundary), with one cudaEventSynchronize on
// the last end event of each stream used. The CUDA clock exists only in builds with CUDA
// (cuda_timers_available()); the header needs no CUDA.

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::profiler {

/// DeepSpeed's timer names (runtime/engine.py).
namespace timer_names {
inline constexpr const char* kForwardMicro = "fwd_microstep";
inline constexpr const char* kBackwardMicro = "bwd_microstep";
inline constexpr const char* kBackwardInnerMicro = "bwd_inner_microstep";
inline constexpr const char* kBackwardReduceMicro = "bwd_allreduce_microstep";
inline constexpr const char* kStepMicro = "step_microstep";
inline constexpr const char* kForward = "fwd";
inline constexpr const char* kBackward = "bwd";
inline constexpr const char* kBackwardInner = "bwd_inner";
inline constexpr const char* kBackwardReduce = "bwd_allreduce";
inline constexpr const char* kStep = "step";
}  // namespace timer_names

/// fwd_microstep, bwd_microstep, bwd_inner_microstep, bwd_allreduce_microstep, step_microstep.
const std::vector<std::string>& microstep_timer_names();
/// fwd, bwd, bwd_inner, bwd_allreduce, step (logged at the gradient-accumulation boundary).
const std::vector<std::string>& global_timer_names();
/// Whether this build can time on CUDA events.
bool cuda_timers_available();

/// One named timer: intervals accumulate until reset.
class WallClockTimer {
 public:
  WallClockTimer(std::string name, std::function<double()> host_clock_ms);
  ~WallClockTimer();
  WallClockTimer(WallClockTimer&&) noexcept;
  WallClockTimer& operator=(WallClockTimer&&) noexcept;

  /// Starts on the host clock. Throws ProfilerError when already started (DeepSpeed asserts).
  void start();
  /// Starts by recording a CUDA event on `cuda_stream` (a cudaStream_t; nullptr = the legacy
  /// default stream); stop() records the end event on the same stream. Throws ProfilerError when
  /// already started or when the build has no CUDA.
  void start_on_stream(void* cuda_stream);
  /// Ends the interval. Throws ProfilerError when not started.
  void stop();
  /// Sum of the intervals since the last reset, in ms; a running timer is stopped for the read
  /// and started again, as DeepSpeed's elapsed() does. `reset` clears the intervals.
  double elapsed_ms(bool reset = true);
  /// 10 %-trimmed mean of the intervals (scipy trim_mean), ms; 0 without intervals.
  double mean_ms();
  /// Every interval since the last reset, in ms (resolves pending CUDA events).
  std::vector<double> intervals_ms();
  /// Drops the intervals and any running start.
  void reset();
  bool running() const;
  const std::string& name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// DeepSpeed's SynchronizedWallClockTimer: timers by name, created on first use.
class StepTimers {
 public:
  /// Host clock: std::chrono::steady_clock.
  StepTimers();
  /// Host clock from `clock_ms` (milliseconds from any origin), for tests and replay.
  explicit StepTimers(std::function<double()> clock_ms);

  /// The timer `name`, created on first use (timers(name) in DeepSpeed).
  WallClockTimer& operator()(const std::string& name);
  bool has(const std::string& name) const;
  /// Timer names, sorted.
  std::vector<std::string> names() const;

  /// "time (ms) | a: 1.23 | b: 4.56" over the `names` that exist, each elapsed / normalizer
  /// (DeepSpeed's log(); the caller adds the "[Rank N] " prefix of log_dist).
  std::string log_line(const std::vector<std::string>& names, double normalizer = 1.0, bool reset = true);
  /// The same values as TimerValue rows for a sessions::TimerBreakdown.
  std::vector<sessions::TimerValue> breakdown(const std::vector<std::string>& names, double normalizer = 1.0,
                                              bool reset = true);
  /// name -> trimmed mean / normalizer, ms, over the `names` that exist (get_mean(); DeepSpeed's
  /// own multiplies the ms value by 1000 again, which we do not copy).
  std::map<std::string, double> means(const std::vector<std::string>& names, double normalizer = 1.0);

 private:
  std::function<double()> clock_ms_;
  std::map<std::string, WallClockTimer> timers_;
};

}  // namespace shardscope::profiler
