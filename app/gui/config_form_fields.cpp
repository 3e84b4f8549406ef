#include "app/gui/config_form_fields.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace shardscope::gui {
namespace {

using Json = nlohmann::ordered_json;  // ordered: the user's key order survives a form edit

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(path.substr(start, dot - start));
  parts.push_back(path.substr(start));
  return parts;
}

const Json* find_path(const Json& root, const std::string& path) {
  const Json* node = &root;
  for (const auto& key : split_path(path)) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

void set_path(Json& root, const std::string& path, const std::optional<Json>& value) {
  const auto parts = split_path(path);
  Json* node = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!value && (!node->is_object() || !node->contains(parts[i]))) return;  // nothing to remove
    Json& child = (*node)[parts[i]];
    if (!child.is_object()) child = Json::object();
    node = &child;
  }
  if (value)
    (*node)[parts.back()] = *value;
  else
    node->erase(parts.back());
}

bool enabled(const Json& root, const char* block) {
  const Json* flag = find_path(root, std::string(block) + ".enabled");
  return flag && flag->is_boolean() && flag->get<bool>();
}

Json parse_text(const std::string& text) {
  // DeepSpeed reads configs with hjson, so comments are allowed; the form keeps to JSON + comments.
  return Json::parse(text, nullptr, true, /*ignore_comments=*/true);
}

void apply_precision(Json& root, const std::string& mode) {
  // Only touch blocks that exist or that must turn on: fp32 is the absence of both.
  for (const char* block : {"fp16", "bf16"}) {
    const bool on = mode == block;
    if (on || root.contains(block)) set_path(root, std::string(block) + ".enabled", Json(on));
  }
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
  Json root;
  try {
    root = parse_text(text);
  } catch (const Json::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
  if (!root.is_object()) {
    if (error) *error = "the config must be a JSON object";
    return std::nullopt;
  }
  std::map<std::string, std::string> values;
  for (const auto& field : config_form_fields()) {
    if (field.kind == FormFieldKind::kPrecision) {
      values[field.path] = enabled(root, "bf16") ? "\"bf16\"" : enabled(root, "fp16") ? "\"fp16\"" : "\"fp32\"";
      continue;
    }
    const Json* node = find_path(root, field.path);
    values[field.path] = node ? node->dump() : std::string();
  }
  return values;
}

std::string apply_form_value(const std::string& text, const std::string& path, const std::string& value_json) {
  Json root;
  try {
    root = text.find_first_not_of(" \t\r\n") == std::string::npos ? Json::object() : parse_text(text);
  } catch (const Json::exception& e) {
    throw std::invalid_argument(std::string("the editor's text does not parse: ") + e.what());
  }
  if (!root.is_object()) throw std::invalid_argument("the config must be a JSON object");
  std::optional<Json> value;
  if (!value_json.empty()) {
    try {
      value = Json::parse(value_json);
    } catch (const Json::exception& e) {
      throw std::invalid_argument("bad value for " + path + ": " + e.what());
    }
  }
  if (path == "precision")
    apply_precision(root, value && value->is_string() ? value->get<std::string>() : "fp32");
  else
    set_path(root, path, value);
  return root.dump(2) + "\n";
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
    return value.is_string() ? value.get<std::string>() : value.dump();
  } catch (const Json::exception&) {
    return value_json;
  }
}

}  // namespace shardscope::gui
