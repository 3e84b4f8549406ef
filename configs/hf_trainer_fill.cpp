// The Hugging Face Trainer's "auto" fill, step by step as transformers 5.24.0 runs it
// (integrations/deepspeed.py): trainer_config_process when TrainingArguments are created, then
// trainer_config_finalize once the model and the number of training steps are known. Values keep
// Python's types (int, float, bool) because they are compared and printed the Python way.
#include <algorithm>
#include <cmath>

#include "configs/hf_trainer_fill.hpp"
#include "configs/python_repr.hpp"
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

constexpr const char* kMismatchHeader =
    "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:";
constexpr const char* kMismatchFooter = "The easiest method is to set these DeepSpeed config values to 'auto'.";

class TrainerFill {
 public:
  explicit TrainerFill(ValidationContext& context) : context_(context) {}

  /// accelerate's HfDeepSpeedConfig.find_config_node + HfTrainerDeepSpeedConfig.fill_match.
  void fill_match(const std::string& path, const nlohmann::json& hf_value, const std::string& hf_key,
                  bool must_match = true) {
    ConfigNode* node = node_at(path);
    if (!node) return;
    if (node->is_auto()) {
      *node = json_to_node(hf_value, node->location);
      context_.override_sources()[path] = ValueSource::kAutoFilled;
      report_.filled.push_back({path, hf_value});
      return;
    }
    if (!must_match || node->kind == ConfigNode::Kind::kNull || python_equal(*node, hf_value)) return;
    const std::string line = "- ds " + path + "=" + python_str(*node) + " vs hf " + hf_key + "=" + python_str(hf_value);
    report_.mismatches.push_back(line);
    context_.error("hf-trainer-mismatch", path, std::string(kMismatchHeader) + " " + line, kMismatchFooter);
  }
  void fill_only(const std::string& path, const nlohmann::json& value) { fill_match(path, value, "", false); }
  bool is_auto(const std::string& path) {
    const ConfigNode* node = node_at(path);
    return node && node->is_auto();
  }
  /// The leaf if every parent on the path is an object; nullptr when a parent is missing.
  ConfigNode* node_at(const std::string& path) {
    ConfigNode* node = &context_.mutable_root();
    std::size_t start = 0;
    while (true) {
      const auto dot = path.find('.', start);
      if (!node->is_object()) return nullptr;
      node = node->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (!node || dot == std::string::npos) return node;
      start = dot + 1;
    }
  }

  ValidationContext& context_;
  HfTrainerReport report_;
};

void trainer_config_process(TrainerFill& fill, const HfTrainerArguments& a, int world_size) {
  fill.fill_match("train_micro_batch_size_per_gpu", a.per_device_train_batch_size, "per_device_train_batch_size");
  fill.fill_match("gradient_accumulation_steps", a.gradient_accumulation_steps, "gradient_accumulation_steps");
  fill.fill_match("train_batch_size", world_size * a.per_device_train_batch_size * a.gradient_accumulation_steps,
                  "train_batch_size (calculated)");
  fill.fill_match("gradient_clipping", a.max_grad_norm, "max_grad_norm");
  fill.fill_match("optimizer.params.lr", a.learning_rate, "learning_rate");
  fill.fill_match("optimizer.params.betas", nlohmann::json::array({a.adam_beta1, a.adam_beta2}),
                  "adam_beta1+adam_beta2");
  fill.fill_match("optimizer.params.eps", a.adam_epsilon, "adam_epsilon");
  fill.fill_match("optimizer.params.weight_decay", a.weight_decay, "weight_decay");
  fill.fill_only("scheduler.params.warmup_min_lr", 0);
  fill.fill_match("scheduler.params.warmup_max_lr", a.learning_rate, "learning_rate");
  fill.fill_match("fp16.enabled", a.fp16, "fp16|fp16_full_eval");
  fill.fill_match("bf16.enabled", a.bf16, "bf16|bf16_full_eval");
}

std::string python_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "'" : ", '") + item + "'";
  return "[" + out + "]";
}

// The hidden_size-based sizes; false when transformers raises for want of a hidden size.
bool fill_hidden_size_keys(TrainerFill& fill, const HfTrainerArguments& a, bool zero3) {
  std::vector<std::string> auto_keys;
  for (const char* key : {"zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                          "zero_optimization.stage3_param_persistence_threshold"})
    if (fill.is_auto(key)) auto_keys.push_back(key);
  if (auto_keys.empty()) return true;
  if (!a.hidden_size) {
    fill.report_.error = "The model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore it's "
                         "not possible to automatically fill out the following `auto` entries in the DeepSpeed config "
                         "file: " + python_list(auto_keys) + ". You can fix that by replacing `auto` values for these "
                         "keys with an integer value of your choice.";
    fill.context_.error("hf-trainer-hidden-size", auto_keys.front(), fill.report_.error,
                        "pass the model's hidden size: --hf-trainer hidden_size=N");
    return false;
  }
  const long long h = *a.hidden_size;
  fill.fill_only("zero_optimization.reduce_bucket_size", h * h);
  if (zero3) {
    fill.fill_only("zero_optimization.stage3_prefetch_bucket_size",
                   static_cast<long long>(0.9 * static_cast<double>(h) * static_cast<double>(h)));
    fill.fill_only("zero_optimization.stage3_param_persistence_threshold", 10 * h);
  }
  return true;
}

// Without max_steps the Trainer counts steps from the dataset, which a config check cannot see.
void report_steps_unknown(TrainerFill& fill, const std::string& path) {
  if (!fill.node_at(path)) return;
  if (fill.is_auto(path))
    fill.context_.error("hf-trainer-steps", path,
                        "\"auto\" in " + path + " is filled by the Trainer from the number of training steps, "
                        "which comes from max_steps or the dataset's length",
                        "pass the run's step count: --hf-trainer max_steps=N");
  else
    fill.context_.report(Severity::kNote, "hf-trainer-steps", path,
                         path + " is not compared with the number of training steps (unknown without max_steps)",
                         "pass --hf-trainer max_steps=N to check it as the Trainer does");
}

void fill_scheduler_steps(TrainerFill& fill, const HfTrainerArguments& a) {
  const std::optional<long long> steps = a.max_steps;
  if (steps)
    fill.fill_match("scheduler.params.total_num_steps", *steps, "num_training_steps (calculated)");
  else
    report_steps_unknown(fill, "scheduler.params.total_num_steps");
  // TrainingArguments.get_warmup_steps, then the Trainer's max(1, ...) for deepspeed >= 0.19.6.
  std::optional<long long> warmup;
  if (a.warmup_steps >= 1) warmup = static_cast<long long>(a.warmup_steps);
  else if (a.warmup_steps == 0) warmup = 0;
  else if (steps) warmup = static_cast<long long>(std::ceil(static_cast<double>(*steps) * a.warmup_steps));
  if (warmup)
    fill.fill_match("scheduler.params.warmup_num_steps", std::max<long long>(1, *warmup), "warmup_steps");
  else
    report_steps_unknown(fill, "scheduler.params.warmup_num_steps");
}

void trainer_config_finalize(TrainerFill& fill, const HfTrainerArguments& a, bool zero3) {
  if (!fill_hidden_size_keys(fill, a, zero3)) return;  // transformers raises before the rest
  fill_scheduler_steps(fill, a);
  if (fill.report_.mismatches.empty()) return;
  std::string lines;
  for (const auto& line : fill.report_.mismatches) lines += (lines.empty() ? "" : "\n") + line;
  fill.report_.error = std::string(kMismatchHeader) + "\n" + lines + "\n" + kMismatchFooter;
}

}  // namespace

void apply_hf_trainer_fill(ValidationContext& context) {
  if (!context.options().hf_trainer) return;
  const HfTrainerArguments& args = *context.options().hf_trainer;
  TrainerFill fill(context);
  fill.report_.arguments = args;
  fill.report_.world_size = context.options().world_size.value_or(1);
  // HfDeepSpeedConfig reads the stage once, before anything is filled (-1 when absent).
  const ConfigNode* stage = fill.node_at("zero_optimization.stage");
  const bool zero3 = stage && stage->is_number() && stage->number_value == 3;
  trainer_config_process(fill, args, fill.report_.world_size);
  trainer_config_finalize(fill, args, zero3);
  context.hf_trainer = std::move(fill.report_);
}

nlohmann::json hf_trainer_report_to_json(const HfTrainerReport& report) {
  nlohmann::json filled = nlohmann::json::object();
  for (const auto& f : report.filled) filled[f.path] = f.value;
  return {{"arguments", hf_trainer_arguments_to_json(report.arguments)},
          {"world_size", report.world_size},
          {"filled", filled},
          {"mismatches", report.mismatches},
          {"error", report.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.error)}};
}

}  // namespace shardscope::configs
