#pragma once
// DeepSpeed 0.19.7's `autotuning` block (deepspeed/autotuning/config.py and constants.py), read
// with its defaults and checked with its words, and what each key means to `shardscope tune`
// (docs/tune.md, "The autotuning block").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::tune {

struct AutotuningBlock {
  bool present = false;  ///< the config has an autotuning block
  bool enabled = false;
  bool fast = true;
  std::string metric = "throughput";  ///< latency | throughput | flops
  std::int64_t start_profile_step = 3;
  std::int64_t end_profile_step = 5;
  bool profile_steps_given = false;   ///< either key written: a trial then runs exactly that window
  std::string tuner_type = "gridsearch";
  std::int64_t tuner_early_stopping = 5;
  std::int64_t tuner_num_trials = 50;
  std::string results_dir = "autotuning_results";
  std::string exps_dir = "autotuning_exps";
  bool results_dir_given = false, exps_dir_given = false;
  bool overwrite = true;
  std::int64_t mp_size = 1;
  std::optional<std::int64_t> max_train_batch_size;
  std::int64_t min_train_batch_size = 1;
  std::int64_t max_train_micro_batch_size_per_gpu = 1024;
  std::int64_t min_train_micro_batch_size_per_gpu = 1;
  std::int64_t num_tuning_micro_batch_sizes = 3;
  std::map<std::string, std::string> arg_mappings;  ///< ds_config key -> training-script flag
  std::vector<std::string> notes;  ///< keys read but not used, and how ShardScope differs
};

/// Reads `config["autotuning"]` (absent: DeepSpeed's defaults). Throws TuneError with DeepSpeed's
/// message where it has one ("results_dir cannot be empty") and otherwise naming the key, the
/// value and what it takes.
AutotuningBlock read_autotuning_block(const nlohmann::json& config, const std::string& file_name);

/// The ShardScope metric for DeepSpeed's: throughput -> samples_per_s, latency -> step_time,
/// flops -> tokens_per_s (model FLOPs per token are fixed for one model, so both rank alike).
std::string metric_for_autotuning(const std::string& deepspeed_metric);

}  // namespace shardscope::tune
