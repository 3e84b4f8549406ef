#pragma once
// The Hugging Face Trainer's filling of "auto" (transformers 5.24.0,
// integrations/deepspeed.py: HfTrainerDeepSpeedConfig.trainer_config_process and
// trainer_config_finalize): every "auto" key it knows gets the TrainingArguments value, and every
// key it knows that is written with another value than the arguments' is a mismatch, reported
// with transformers' own text. validate() runs it before DeepSpeed's checks when
// ValidateOptions::hf_trainer is set (`shardscope validate --hf-trainer`).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::configs {

/// The TrainingArguments that the fill reads, with transformers 5.24.0's defaults.
struct HfTrainerArguments {
  long long per_device_train_batch_size = 8;
  long long gradient_accumulation_steps = 1;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  bool fp16 = false;
  bool bf16 = false;
  double warmup_steps = 0;                ///< >= 1: a count; in [0, 1): a fraction of the steps
  std::optional<long long> max_steps;     ///< the Trainer's num_training_steps when > 0
  std::optional<long long> hidden_size;   ///< the model config's hidden_size
};

/// Parses "per_device_train_batch_size=4,learning_rate=3e-5,bf16=true" (empty: the defaults).
/// Throws std::invalid_argument naming the key or value that is wrong and the accepted keys.
HfTrainerArguments parse_hf_trainer_arguments(const std::string& text);

/// The arguments as a JSON object (for the --json report).
nlohmann::json hf_trainer_arguments_to_json(const HfTrainerArguments& args);

/// One key the Trainer wrote into the config.
struct HfFilledValue {
  std::string path;       ///< "optimizer.params.lr"
  nlohmann::json value;   ///< what it wrote (Python's int/float/bool kept)
};

/// What the fill did: the filled keys, the mismatch lines, and the error transformers raises
/// first (the mismatch ValueError, or the hidden_size / step-count error), empty when none.
struct HfTrainerReport {
  HfTrainerArguments arguments;
  int world_size = 1;
  std::vector<HfFilledValue> filled;
  std::vector<std::string> mismatches;  ///< "- ds train_batch_size=16 vs hf train_batch_size (calculated)=32"
  std::string error;                    ///< the ValueError text, or empty
};

/// The report as JSON: {"arguments", "world_size", "filled": {path: value}, "mismatches", "error"}.
nlohmann::json hf_trainer_report_to_json(const HfTrainerReport& report);

}  // namespace shardscope::configs
