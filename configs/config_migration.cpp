// DeepSpeed's deprecated keys (migrated with a warning, as its pydantic models do), keys 0.19.7
// accepts but schedules for removal, and the keys each release removed (a leftover one fails at
// parse time with a DeepSpeedConfigError in DeepSpeed's words).
#include <algorithm>
#include <cctype>
#include <vector>

#include "configs/ascii_case.hpp"
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

// DeepSpeed's _REMOVED_TOP_LEVEL_CONFIG_KEYS and _REMOVED_ZERO_CONFIG_KEYS (runtime/config.py), in
// their dict order: _reject_removed_config_keys raises a DeepSpeedConfigError with the message of
// the first one present, before any other check. The messages are DeepSpeed's own words.
constexpr const char* kRemovedIssue = "https://github.com/deepspeedai/DeepSpeed/issues/8489";

struct RemovedKey {
  const char* path;
  const char* message;  ///< DeepSpeed's, without the trailing " See <issue>." (added back below)
  bool see_issue;       ///< 0.19.8's "elasticity" message alone has no "See ..."
  const char* hint;
};

const RemovedKey kNebula{"nebula",
    "Nebula checkpointing has been removed. A leftover 'nebula' block would be ignored and checkpoints would "
    "silently fall back to local torch.save.", true,
    "remove the block; checkpoints are written by the torch checkpoint engine (or the "
    "\"checkpoint\": {\"writer\": ...} fast writer)"};
const RemovedKey kCompression{"compression_training",
    "The DeepSpeed compression library has been removed. A leftover 'compression_training' block would be "
    "ignored and the model would train unquantized.", true,
    "quantize or prune with an external quantization toolkit and remove the block"};
const RemovedKey kAmp{"amp",
    "NVIDIA Apex AMP integration has been removed. Use DeepSpeed 'fp16', 'bf16', or 'torch_autocast' instead.",
    true, "replace the \"amp\" block with \"bf16\": {\"enabled\": true} (or \"fp16\" / \"torch_autocast\")"};
const RemovedKey kQuantize{"quantize_training",
    "Mixture-of-Quantization (MoQ) / 'quantize_training' has been removed.", true,
    "quantize with an external quantization toolkit and remove the block"};
const RemovedKey kSparseGradients{"sparse_gradients",
    "Sparse compression of dense torch.nn.Embedding gradients has been removed. A leftover 'sparse_gradients' "
    "flag would be ignored and those gradients would be reduced dense. Gradients from an embedding constructed "
    "with sparse=True are still reduced sparsely and need no config flag.", true,
    "remove the key (build the embedding with sparse=True if you want sparse gradients)"};
const RemovedKey kEigenvalue{"eigenvalue",
    "Eigenvalue-based Mixture-of-Quantization (MoQ) has been removed; the standalone 'eigenvalue' configuration "
    "block is no longer supported.", true, "remove the block"};
const RemovedKey kSparseAttention{"sparse_attention",
    "DeepSpeed Sparse Attention has been removed; the 'sparse_attention' configuration block is no longer "
    "supported.", true,
    "use the model's own attention (e.g. PyTorch scaled_dot_product_attention) and remove the block"};
const RemovedKey kElasticity{"elasticity",
    "Elastic training has been removed; the 'elasticity' configuration block is no longer supported. Set "
    "train_batch_size / train_micro_batch_size_per_gpu / gradient_accumulation_steps directly. ", false,
    "remove the block and write the batch keys"};
const RemovedKey kGraphHarvesting{"graph_harvesting",
    "Graph harvesting has been removed; the 'graph_harvesting' configuration option is no longer supported.",
    true, "remove the key"};
const RemovedKey kCurriculum{"curriculum_learning",
    "Legacy top-level 'curriculum_learning' has been removed. Use 'data_efficiency.data_sampling."
    "curriculum_learning' instead.", true,
    "move the block under \"data_efficiency\": {\"data_sampling\": {\"curriculum_learning\": ...}}"};
const RemovedKey kPld{"progressive_layer_drop",
    "Progressive Layer Dropping has been removed; the 'progressive_layer_drop' configuration block is no "
    "longer supported.", true, "remove the block"};
const RemovedKey kMicsShard{"zero_optimization.mics_shard_size",
    "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_shard_size' is no longer supported.", true,
    "use ZeRO stage 3 with \"zero_hpz_partition_size\" (hierarchical partitioning)"};
const RemovedKey kMicsGather{"zero_optimization.mics_hierarchical_params_gather",
    "MiCS ZeRO-3 sharding has been removed; 'zero_optimization.mics_hierarchical_params_gather' is no longer "
    "supported.", true, "use ZeRO stage 3 with \"zero_hpz_partition_size\" (hierarchical partitioning)"};
const RemovedKey kLoco{"zero_optimization.zeropp_loco_param",
    "LoCo-Zero++ has been removed; 'zero_optimization.zeropp_loco_param' is no longer supported. Remove this "
    "key to use standard ZeRO++ quantized gradients without LoCo error feedback.", true,
    "remove the key; keep \"zero_quantized_gradients\" for quantized gradient communication"};

// 0.19.7: runtime/config.py:98-118. 0.19.8: runtime/config.py:81-130.
const std::vector<const RemovedKey*> kRemoved0197 = {&kNebula, &kCompression, &kQuantize, &kSparseAttention,
                                                     &kMicsShard, &kMicsGather};
const std::vector<const RemovedKey*> kRemoved0198 = {
    &kNebula, &kCompression, &kAmp, &kQuantize, &kSparseGradients, &kEigenvalue, &kSparseAttention,
    &kElasticity, &kGraphHarvesting, &kCurriculum, &kPld, &kMicsShard, &kMicsGather, &kLoco};

const std::vector<const RemovedKey*>& removed_keys(DeepSpeedVersion version) {
  return version == DeepSpeedVersion::k0_19_8 ? kRemoved0198 : kRemoved0197;
}

/// The first removed key present is DeepSpeed's error; any later one would be its next error once
/// the first is gone, so it is reported too, saying so.
void check_removed_keys(ValidationContext& context) {
  const char* first = nullptr;
  for (const RemovedKey* removed : removed_keys(context.options().deepspeed_version)) {
    if (!context.written(removed->path)) continue;
    std::string message = removed->message;
    if (removed->see_issue) message += std::string(" See ") + kRemovedIssue + ".";
    std::string hint = removed->hint;
    if (first) hint += " (DeepSpeed stops at the first removed key, \"" + std::string(first) + "\"; this one is next)";
    context.error("removed-feature", removed->path, "DeepSpeedConfigError: " + message, hint);
    if (!first) first = removed->path;
  }
}

void check_removed_optimizer(ValidationContext& context) {
  const ConfigNode* type = context.node_at("optimizer.type");
  if (!type || !type->is_string()) return;
  const std::string name = ascii_lowercase(type->string_value);
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
  check_removed_keys(context);
  check_removed_optimizer(context);
  if (context.options().deepspeed_version != DeepSpeedVersion::k0_19_7) return;  // 0.19.8 removed them all
  for (const auto& deprecated : kDeprecated)
    if (context.written(deprecated.path))
      context.warning("deprecated-key", deprecated.path, deprecated.message, deprecated.hint);
}

}  // namespace shardscope::configs
