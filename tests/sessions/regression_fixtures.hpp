#pragma once
// Synthetic runs for the regression tests: step times with AR(1) noise and a known injected
// slowdown that lives in one phase (backward) and one kernel family (the LayerNorm backward), so
// the expected verdicts and contributors are known before the check runs.

#include <cstdint>
#include <string>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions::testing {

struct SyntheticRun {
  std::string name = "run";
  std::uint64_t seed = 1;
  int steps = 120;
  double step_ms = 100;         ///< mean step time before the slowdown: forward 30 %, backward 60 %, step 10 %
  double layernorm_extra_ms = 0;  ///< added to every step's backward and to the LayerNorm backward kernels
  double rho = 0.7;             ///< lag-1 autocorrelation of the step-time noise
  double cv = 0.02;             ///< its coefficient of variation
  std::int64_t peak_bytes = std::int64_t{1} << 30;
  double loss_scale = 1.0;      ///< multiplies the loss curve
  bool profiled = false;        ///< record kernels of steps 20..24
  std::string config_json = R"({"train_micro_batch_size_per_gpu": 4})";
  std::vector<std::string> train_flags;  ///< after "shardscope train"
  std::string deepspeed_version;         ///< VersionsInfo::deepspeed ("" for ShardScope's engine)
  std::string shardscope_version = "0.1.0";
  std::string git_hash = "abc1234";
  std::vector<std::string> tags = {"nightly"};
  double started_at = 1795900000;
};

/// The run's events, in the order a rank sends them.
std::vector<Event> synthetic_run(const SyntheticRun& run);
/// Writes the run as session uid "uid-<name>-<seed>"; returns its id.
std::int64_t write_synthetic_run(Store& store, const SyntheticRun& run);

}  // namespace shardscope::sessions::testing
