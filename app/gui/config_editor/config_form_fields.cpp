#include "app/gui/config_editor/config_form_fields.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "configs/config_document.hpp"
#include "configs/config_text_edit.hpp"

namespace shardscope::gui {
namespace {

using Json = nlohmann::json;

const configs::ConfigNode* find_path(const configs::ConfigNode& root, const std::string& path) {
  const configs::ConfigNode* node = &root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    if (!node->is_object()) return nullptr;
    node = node->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (!node || dot == std::string::npos) return node;
    start = dot + 1;
  }
}

bool enabled(const configs::ConfigNode& root, const char* block) {
  const configs::ConfigNode* flag = find_path(root, std::string(block) + ".enabled");
  return flag && flag->kind == configs::ConfigNode::Kind::kBool && flag->bool_value;
}

bool left_to_the_trainer(const configs::ConfigNode& root, const char* block) {
  const configs::ConfigNode* flag = find_path(root, std::string(block) + ".enabled");
  return flag && flag->is_auto();
}

/// What the precision box shows: both blocks on is DeepSpeed's assertion, not a mode; "auto" is
/// the Hugging Face Trainer's to fill.
std::string precision_value(const configs::ConfigNode& root) {
  // DeepSpeed still reads the legacy "bfloat16" block as bf16.
  const bool bf16 = enabled(root, "bf16") || enabled(root, "bfloat16");
  const bool fp16 = enabled(root, "fp16");
  if (bf16 && fp16) return Json(kPrecisionConflict).dump();
  if (left_to_the_trainer(root, "bf16") || left_to_the_trainer(root, "fp16")) return Json(kPrecisionAuto).dump();
  return bf16 ? "\"bf16\"" : fp16 ? "\"fp16\"" : "\"fp32\"";
}

std::string apply_precision(std::string text, const std::string& mode) {
  // Only blocks that exist or must turn on are touched: fp32 is the absence of both.
  const configs::ConfigDocument document = configs::parse_config_text(text, "config");
  for (const char* block : {"fp16", "bf16", "bfloat16"}) {
    const bool on = mode == block;
    const bool present = document.root && document.root->is_object() && document.root->find(block);
    if (on || present) text = configs::set_config_value(text, std::string(block) + ".enabled", on ? "true" : "false");
  }
  return text;
}

}  // namespace

const std::vector<FormField>& config_form_fields() {
  static const std::vector<FormField> fields = {
      {"train_batch_size", "Global batch", "Batch", FormFieldKind::kNumber, {},
       "samples per optimizer step over all GPUs = micro-batch x accumulation x world size"},
      {"train_micro_batch_size_per_gpu", "Micro-batch / GPU", "Batch", FormFieldKind::kNumber, {},
       "samples per forward/backward on one GPU"},
      {"gradient_accumulation_steps", "Accumulation steps", "Batch", FormFieldKind::kNumber, {},
       "micro-steps per optimizer step"},
      {"precision", "Precision", "Precision", FormFieldKind::kPrecision, {"fp32", "fp16", "bf16"},
       "sets fp16.enabled / bf16.enabled (fp32 = neither)"},
      {"zero_optimization.stage", "ZeRO stage", "ZeRO", FormFieldKind::kChoice, {"0", "1", "2", "3"},
       "0 = plain data parallel, 1 = shard optimizer states, 2 = + gradients, 3 = + parameters"},
      {"zero_optimization.overlap_comm", "Overlap comm", "ZeRO", FormFieldKind::kTriBool, {},
       "overlap reduction with backward (default: true at stage 3, else false)"},
      {"zero_optimization.contiguous_gradients", "Contiguous grads", "ZeRO", FormFieldKind::kTriBool, {},
       "copy gradients into one buffer as they are produced"},
      {"zero_optimization.reduce_bucket_size", "Reduce bucket", "ZeRO", FormFieldKind::kNumber, {},
       "elements reduced at once (default 5e8)"},
      {"zero_optimization.allgather_bucket_size", "All-gather bucket", "ZeRO", FormFieldKind::kNumber, {},
       "stage 1-2 elements gathered at once (default 5e8)"},
      {"zero_optimization.stage3_prefetch_bucket_size", "Prefetch bucket", "ZeRO", FormFieldKind::kNumber, {},
       "stage 3 elements fetched ahead (default 5e7)"},
      {"zero_optimization.stage3_max_live_parameters", "Max live params", "ZeRO", FormFieldKind::kNumber, {},
       "stage 3 parameters kept gathered at once (default 1e9)"},
      {"zero_optimization.offload_optimizer.device", "Offload optimizer", "ZeRO", FormFieldKind::kChoice,
       {"none", "cpu", "nvme"}, "where optimizer states live (stage 1-3)"},
      {"zero_optimization.offload_param.device", "Offload params", "ZeRO", FormFieldKind::kChoice,
       {"none", "cpu", "nvme"}, "where parameters live (stage 3 only)"},
      {"optimizer.type", "Optimizer", "Optimizer", FormFieldKind::kChoice,
       {"AdamW", "Adam", "Lamb", "OneBitAdam", "ZeroOneAdam", "OneBitLamb", "Lion", "SGD", "Adagrad"},
       "optimizer class DeepSpeed builds"},
      {"optimizer.params.lr", "Learning rate", "Optimizer", FormFieldKind::kNumber, {}, "peak learning rate"},
      {"scheduler.type", "Scheduler", "Scheduler", FormFieldKind::kChoice,
       {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"}, "learning-rate schedule"},
      {"gradient_clipping", "Gradient clipping", "Scheduler", FormFieldKind::kNumber, {},
       "max global gradient norm; 0 = off (default)"},
      {"tensorboard.enabled", "TensorBoard", "Monitoring", FormFieldKind::kTriBool, {}, "write TensorBoard events"},
      {"wandb.enabled", "Weights & Biases", "Monitoring", FormFieldKind::kTriBool, {}, "log to W&B"},
      {"csv_monitor.enabled", "CSV monitor", "Monitoring", FormFieldKind::kTriBool, {}, "write metrics as CSV"},
      {"steps_per_print", "Steps per print", "Monitoring", FormFieldKind::kNumber, {}, "log every N steps"},
  };
  return fields;
}

std::optional<std::map<std::string, std::string>> read_form_values(const std::string& text, std::string* error) {
  // The configs library's parser reads what DeepSpeed's hjson reader reads (comments, trailing
  // commas, unquoted keys, quoteless strings) and says where the first error is.
  const configs::ConfigDocument document = configs::parse_config_text(text, "config");
  for (const auto& d : document.parse_diagnostics)
    if (d.severity == configs::Severity::kError) {
      if (error)
        *error = "line " + std::to_string(d.location.line) + ", column " + std::to_string(d.location.column) + ": " +
                 d.message + (d.hint.empty() ? "" : " (" + d.hint + ")");
      return std::nullopt;
    }
  if (!document.root || !document.root->is_object()) {
    if (error) *error = "the config must be a JSON object {...}";
    return std::nullopt;
  }
  std::map<std::string, std::string> values;
  for (const auto& field : config_form_fields()) {
    if (field.kind == FormFieldKind::kPrecision) {
      values[field.path] = precision_value(*document.root);
      continue;
    }
    const configs::ConfigNode* node = find_path(*document.root, field.path);
    values[field.path] = node ? configs::to_json_text(*node) : std::string();
  }
  return values;
}

std::string apply_form_value(const std::string& text, const std::string& path, const std::string& value_json) {
  try {
    if (path == "precision") {
      const Json mode = value_json.empty() ? Json("fp32") : Json::parse(value_json);
      return apply_precision(text, mode.is_string() ? mode.get<std::string>() : "fp32");
    }
    return configs::set_config_value(text, path, value_json.empty() ? std::nullopt : std::optional(value_json));
  } catch (const configs::ConfigEditError& e) {
    throw std::invalid_argument(e.what());
  } catch (const Json::exception& e) {
    throw std::invalid_argument("bad value for " + path + ": " + e.what());
  }
}

std::optional<std::string> number_field_json(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return std::string();
  const std::string trimmed = text.substr(first, text.find_last_not_of(" \t") - first + 1);
  if (trimmed == "auto") return std::string("\"auto\"");
  try {
    const Json number = Json::parse(trimmed);
    if (number.is_number()) return trimmed;
  } catch (const Json::exception&) {
  }
  return std::nullopt;
}

std::string choice_field_json(const std::string& text) {
  if (text.empty()) return {};
  if (auto number = number_field_json(text); number && !number->empty() && (*number)[0] != '"') return *number;
  return Json(text).dump();
}

bool json_values_equal(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty();
  try {
    const Json x = Json::parse(a), y = Json::parse(b);
    if (x.is_number() && y.is_number()) return x.get<double>() == y.get<double>();
    return x == y;
  } catch (const Json::exception&) {
    return a == b;
  }
}

std::string field_display_text(const std::string& value_json) {
  if (value_json.empty()) return {};
  try {
    const Json value = Json::parse(value_json);
    if (value.is_number()) return value_json;  // as written: 3e-4 stays 3e-4
    return value.is_string() ? value.get<std::string>() : value.dump();
  } catch (const Json::exception&) {
    return value_json;
  }
}

}  // namespace shardscope::gui
