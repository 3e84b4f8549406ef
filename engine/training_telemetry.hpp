#pragma once
// What a training run tells the world: DeepSpeed-style progress and timer lines, a progress bar
// on a terminal, and every step of this rank into the session (a session file of its own, or the
// launcher's collector). Split from the training loop so the loop reads as DeepSpeed's does.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "configs/config_model.hpp"
#include "engine/engine.hpp"
#include "engine/memory_prediction.hpp"
#include "engine/training_run.hpp"
#include "sessions/events.hpp"

namespace shardscope::sessions {
class EventSink;
}

namespace shardscope::engine {

/// Bytes this rank holds for training: the CUDA caching allocator's counters on a GPU, the sizes
/// of the engine's tensors (weights, gradients, master, optimizer state) on the CPU.
struct MemorySample {
  std::int64_t allocated = 0, reserved = 0, peak = 0;
  std::int64_t reserved_peak = 0;  ///< the most the allocator has held from the driver
  /// On a GPU: the device's used bytes (cudaMemGetInfo: total - free), which add the CUDA context,
  /// libraries' handles and anything allocated outside the caching allocator to `reserved`.
  std::int64_t device_used = 0;
};
MemorySample sample_memory(const Engine& engine);

/// The run's peaks so far (memory_prediction.hpp's MeasuredPeaks).
MeasuredPeaks measured_peaks(const Engine& engine);


class TrainingTelemetry {
 public:
  TrainingTelemetry(const TrainRunOptions& options, const configs::ResolvedConfig& config,
                    std::string config_json, int rank, std::ostream& out, std::ostream& err);
  ~TrainingTelemetry();

  /// A DeepSpeed-style line: printed by rank 0, stored as a log line of this rank.
  void log_line(const std::string& line);
  /// Opens the session (RunStart when there is no launcher to send it).
  void start(const Engine& engine, double flops_per_sample);
  void begin_step();
  /// Reports the boundary step that just ended: metrics, timers, progress.
  void end_step(Engine& engine, const StepOutcome& outcome, double loss, std::int64_t tokens);
  /// Median tokens/s of this rank over the run so far.
  double tokens_per_second() const;
  /// Sends one event to the session (CUPTI batches of the profiled window); no-op without one.
  void send(sessions::Event event);
  /// Prints the comms logger's summary, ends the session (RunEnd when there is no launcher);
  /// returns the session id, or "".
  std::string finish(double wall_seconds, const Engine& engine);

 private:
  void send_step(Engine& engine, const StepOutcome& outcome, double loss, double step_ms,
                 std::int64_t tokens);
  void print_progress(const Engine& engine, const StepOutcome& outcome, double loss, double step_ms);

  const TrainRunOptions& options_;
  const configs::ResolvedConfig& config_;
  std::string config_json_;
  int rank_;
  std::ostream& out_;
  std::ostream& err_;
  std::shared_ptr<sessions::EventSink> sink_;
  std::string session_uid_;
  bool owns_run_ = false;  ///< no launcher: this process sends RunStart/RunEnd
  bool finished_ = false;
  double flops_per_sample_ = 0;
  std::chrono::steady_clock::time_point run_start_, step_start_;
  std::vector<double> tokens_per_second_;
  std::int64_t first_step_ = 0;
};

}  // namespace shardscope::engine
