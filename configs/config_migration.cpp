// DeepSpeed 0.19.7's deprecated keys (migrated with a warning, as its pydantic models do), keys
// that are accepted but scheduled for removal, and features 0.19.7 removed (a leftover block
// fails at parse time with a DeepSpeedConfigError naming the feature and its replacement).
#include <algorithm>
#include <cctype>

#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

void remove_member(ConfigNode& object, const std::string& key) {
  object.members.erase(std::remove_if(object.members.begin(), object.members.end(),
                                      [&](const ConfigMember& m) { return m.key == key; }),
                       object.members.end());
}

ConfigNode device_block(const std::string& device, SourceLocation at) {
  return json_to_node(nlohmann::json{{"device", device}}, at);
}

/// cpu_offload -> offload_optimizer and cpu_offload_param -> offload_param (new_param_fn:
/// {device: cpu} when true, nothing when false). Both given is DeepSpeed's assertion.
void migrate_offload_flag(ValidationContext& context, ConfigNode& zero, const std::string& old_key,
                          const std::string& new_key) {
  const ConfigMember* member = zero.find_member(old_key);
  if (!member) return;
  const std::string path = "zero_optimization." + old_key;
  if (zero.find(new_key)) {
    context.error("deprecated-conflict", path,
                  "Cannot provide deprecated parameter '" + old_key + "' and replacing parameter '" +
                      new_key + "' together",
                  "remove \"" + old_key + "\" and keep \"" + new_key + "\"");
    return;
  }
  context.warning("deprecated-key", path,
                  "Config parameter " + old_key + " is deprecated use " + new_key + " instead",
                  "write \"" + new_key + "\": {\"device\": \"cpu\"}");
  const SourceLocation at = member->key_location;
  const bool enabled = member->value.kind == ConfigNode::Kind::kBool && member->value.bool_value;
  remove_member(zero, old_key);
  if (enabled) zero.members.push_back({new_key, at, device_block("cpu", at)});
}

void migrate_gather_fp16(ValidationContext& context, ConfigNode& zero) {
  for (const std::string old_key :
       {"stage3_gather_fp16_weights_on_model_save", "gather_fp16_weights_on_model_save"}) {
    const ConfigMember* member = zero.find_member(old_key);
    if (!member) continue;
    const std::string new_key = "stage3_gather_16bit_weights_on_model_save";
    const std::string path = "zero_optimization." + old_key;
    if (zero.find(new_key) || zero.find("gather_16bit_weights_on_model_save")) {
      context.error("deprecated-conflict", path,
                    "Cannot provide deprecated parameter '" + old_key +
                        "' and replacing parameter '" + new_key + "' together",
                    "remove \"" + old_key + "\"");
      continue;
    }
    context.warning("deprecated-key", path,
                    "Config parameter " + old_key + " is deprecated use " + new_key + " instead",
                    "rename the key to \"" + new_key + "\"");
    ConfigMember renamed = *member;
    renamed.key = new_key;
    remove_member(zero, old_key);
    zero.members.push_back(std::move(renamed));
  }
}

void migrate_zero(ValidationContext& context) {
  ConfigNode* zero = context.mutable_root().find("zero_optimization");
  if (!zero) return;
  if (zero->kind == ConfigNode::Kind::kBool) {
    // The legacy boolean form: true means stage 1 (with allgather_size), false means off.
    const int stage = zero->bool_value ? 1 : 0;
    context.warning("deprecated-key", "zero_optimization",
                    std::string("\"zero_optimization\": ") + (zero->bool_value ? "true" : "false") +
                        " is the deprecated boolean form; DeepSpeed reads it as stage " +
                        std::to_string(stage),
                    "write \"zero_optimization\": {\"stage\": " + std::to_string(stage) + "}");
    *zero = json_to_node(nlohmann::json{{"stage", stage}}, zero->location);
    return;
  }
  if (!zero->is_object()) return;
  migrate_offload_flag(context, *zero, "cpu_offload", "offload_optimizer");
  migrate_offload_flag(context, *zero, "cpu_offload_param", "offload_param");
  if (zero->find("cpu_offload_use_pin_memory")) {
    // set_new_param=False in DeepSpeed: the value is dropped, it reaches no offload block.
    context.warning("deprecated-key", "zero_optimization.cpu_offload_use_pin_memory",
                    "Config parameter cpu_offload_use_pin_memory is deprecated use offload_param "
                    "or offload_optimizer instead; 0.19.7 ignores its value",
                    "set \"pin_memory\" inside offload_optimizer / offload_param");
    remove_member(*zero, "cpu_offload_use_pin_memory");
  }
  migrate_gather_fp16(context, *zero);
}

void migrate_bfloat16(ValidationContext& context) {
  ConfigNode& root = context.mutable_root();
  const ConfigMember* old_block = root.find_member("bfloat16");
  if (!old_block) return;
  if (root.find("bf16")) {
    context.warning("deprecated-key", "bfloat16",
                    "both \"bf16\" and the legacy \"bfloat16\" are given; DeepSpeed reads only "
                    "\"bf16\" and ignores \"bfloat16\"", "remove the \"bfloat16\" block");
    remove_member(root, "bfloat16");
    return;
  }
  context.warning("deprecated-key", "bfloat16",
                  "\"bfloat16\" is the legacy name of the \"bf16\" block", "rename it to \"bf16\"");
  ConfigMember renamed = *old_block;
  renamed.key = "bf16";
  remove_member(root, "bfloat16");
  root.members.push_back(std::move(renamed));
}

struct RemovedFeature {
  const char* path;
  const char* feature;
  const char* replacement;
};

const RemovedFeature kRemovedBlocks[] = {
    {"nebula", "the Nebula checkpoint engine",
     "remove the block; checkpoints are written by the torch checkpoint engine (or the "
     "\"checkpoint\": {\"writer\": ...} fast writer)"},
    {"compression_training", "the compression library (compression_training)",
     "quantize or prune with an external quantization toolkit and remove the block"},
    {"quantize_training", "Mixture-of-Quantization (quantize_training, MoQ)",
     "quantize with an external quantization toolkit and remove the block"},
    {"sparse_attention", "Sparse Attention (sparse_attention)",
     "use the model's own attention (e.g. PyTorch scaled_dot_product_attention) and remove the block"},
    {"zero_optimization.mics_shard_size", "MiCS (mics_shard_size)",
     "use ZeRO stage 3 with \"zero_hpz_partition_size\" (hierarchical partitioning)"},
    {"zero_optimization.mics_hierarchical_params_gather", "MiCS (mics_hierarchical_params_gather)",
     "use ZeRO stage 3 with \"zero_hpz_partition_size\" (hierarchical partitioning)"},
};

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

void check_removed_optimizer(ValidationContext& context) {
  const ConfigNode* type = context.node_at("optimizer.type");
  if (!type || !type->is_string()) return;
  const std::string name = lowered(type->string_value);
  if (name != "onebitadam" && name != "zerooneadam" && name != "onebitlamb") return;
  context.error("removed-feature", "optimizer.type",
                "the 1-bit optimizer \"" + type->string_value +
                    "\" was removed in DeepSpeed 0.19.7; it fails to load this config",
                "use \"Adam\" or \"AdamW\", or ZeRO++ quantized communication "
                "(\"zero_quantized_gradients\": true, \"zero_quantized_weights\": true)");
}

struct DeprecatedFeature {
  const char* path;
  const char* message;
  const char* hint;
};

const DeprecatedFeature kDeprecated[] = {
    {"amp", "the \"amp\" block (NVIDIA Apex AMP) is deprecated and scheduled for removal",
     "use \"bf16\" or \"fp16\" (DeepSpeed's own mixed precision) or \"torch_autocast\""},
    {"progressive_layer_drop", "\"progressive_layer_drop\" is deprecated and scheduled for removal",
     "remove the block; it changes the model's forward, not the engine"},
    {"sparse_gradients", "\"sparse_gradients\" is deprecated and scheduled for removal",
     "remove the key; dense gradients are the supported path"},
    {"zero_optimization.zeropp_loco_param",
     "\"zeropp_loco_param\" (ZeRO++ LoCo) is deprecated and scheduled for removal",
     "remove it; keep \"zero_quantized_gradients\" for quantized gradient communication"},
};

}  // namespace

void migrate_deprecated_keys(ValidationContext& context) {
  migrate_zero(context);
  migrate_bfloat16(context);
}

void check_removed_features(ValidationContext& context) {
  for (const auto& removed : kRemovedBlocks) {
    if (!context.written(removed.path)) continue;
    context.error("removed-feature", removed.path,
                  std::string(removed.feature) + " was removed in DeepSpeed 0.19.7; a config "
                  "that still has \"" + removed.path + "\" fails to load (DeepSpeedConfigError)",
                  removed.replacement);
  }
  check_removed_optimizer(context);
  for (const auto& deprecated : kDeprecated)
    if (context.written(deprecated.path))
      context.warning("deprecated-key", deprecated.path, deprecated.message, deprecated.hint);
}

}  // namespace shardscope::configs
