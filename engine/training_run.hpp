#pragma once
// `shardscope train`: one rank's whole run. Reads and validates the config, builds the model and
// data, resumes from a checkpoint, trains to --steps optimizer steps (counted from the start of
// training, so a resumed run stops where an uninterrupted one would), prints DeepSpeed-style
// progress, reports every step to the session, and saves checkpoints.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "configs/config_validator.hpp"
#include "engine/models/model_spec.hpp"

namespace shardscope::engine {

struct TrainRunOptions {
  std::string config_path;
  std::vector<configs::ConfigOverride> overrides;
  /// Whose rules validate the config (`train --deepspeed-version`; `launch` passes its own choice).
  configs::DeepSpeedVersion deepspeed_version = configs::DeepSpeedVersion::k0_19_7;
  ModelSpec model;
  std::optional<std::string> weights_path;  ///< safetensors file or index.json, HF names
  std::string data = "synthetic";           ///< "synthetic" or a token file (uint16/uint32/llm.c)
  std::int64_t steps = 0;                   ///< optimizer steps from the start of training
  std::optional<std::string> save_dir;
  std::int64_t save_every = 0;              ///< 0: only at the end (when save_dir is set)
  std::optional<std::string> load_dir;
  /// "safe": every checkpoint file opens with torch.load(weights_only=True); "deepspeed": the
  /// optimizer files also carry DeepSpeed's LossScaler object, which DeepSpeed's ZeRO-3 load needs.
  std::string save_format = "safe";
  std::optional<std::string> session_db;    ///< write events straight into this session file
  std::optional<std::string> collector;     ///< or stream them to a launcher's collector host:port
  std::string session_name;                 ///< default: the config file's stem
  std::string device = "auto";              ///< "auto", "cpu", "cuda", "cuda:N"
  std::uint64_t seed = 42;
  bool progress_bar = false;                ///< a live progress line on stderr (a terminal)
  /// The profiled window: CUPTI activity of steps [profile_start, profile_start + profile_steps)
  /// into the session (GPU runs). 0 steps: flops_profiler.profile_step when that block is enabled.
  std::int64_t profile_start = 0, profile_steps = 0;
  std::vector<std::string> command_line;
};

struct TrainRunResult {
  std::int64_t steps_done = 0;              ///< optimizer steps in this process (not resumed ones)
  std::int64_t global_steps = 0;
  std::int64_t skipped_steps = 0;
  std::optional<double> final_loss;
  double wall_seconds = 0;
  double tokens_per_second = 0;
  std::string session_uid;                  ///< empty without a session
};

/// Thrown for a config with errors; the message holds the compiler-style diagnostics.
class TrainConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs the rank described by RANK / LOCAL_RANK / WORLD_SIZE (default 0 / 0 / 1). Progress and
/// DeepSpeed-style lines go to `out`, the progress bar and warnings to `err`.
TrainRunResult run_training(const TrainRunOptions& options, std::ostream& out, std::ostream& err);

/// Model FLOPs of one training step per sample (6N for the matmuls of forward and backward, plus
/// attention's 12 * layers * hidden * seq, as PaLM's appendix B counts them).
double training_flops_per_sample(const ModelSpec& spec, double parameters);

}  // namespace shardscope::engine
