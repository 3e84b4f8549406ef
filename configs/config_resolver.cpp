// Resolution: the effective value of every schema key and where it came from. Defaults are the
// 0.19.7 code defaults; "auto" in a pydantic block is dropped (DeepSpeed's DeepSpeedConfigModel
// filters `v != "auto"`), so the default applies; "auto" elsewhere stays a string, as DeepSpeed
// leaves it. Derived values (overlap_comm by stage, forced timers, comms logging) follow.
#include "configs/config_schema.hpp"
#include "configs/validation_context.hpp"

namespace shardscope::configs {


nlohmann::json::json_pointer pointer_of(const std::string& path) {
  std::string pointer;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    pointer += "/" + path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return nlohmann::json::json_pointer(pointer);
}

namespace {

ValueSource written_source(const ValidationContext& context, const std::string& path,
                           const std::string& alias_path) {
  const auto& sources = context.override_sources();
  if (auto it = sources.find(path); it != sources.end()) return it->second;
  if (auto it = sources.find(alias_path); it != sources.end()) return it->second;
  return ValueSource::kUser;
}

void resolve_field(ValidationContext& context, const BlockSpec& block, const FieldSpec& field,
                   const ConfigNode* block_node) {
  const std::string path = join_path(block.path, field.name);
  const ConfigMember* member = nullptr;
  if (block_node && block_node->is_object()) {
    member = block_node->find_member(field.name);
    if (!member && !field.alias.empty()) member = block_node->find_member(field.alias);
  }
  ResolvedValue entry{path, field.default_json, ValueSource::kDefault, {}, ""};
  nlohmann::json value = nlohmann::json::parse(field.default_json);
  if (member) {
    entry.location = member->key_location;
    if (member->value.is_auto() && field.default_json != "\"auto\"") {
      if (block.strict) {
        entry.source = ValueSource::kAutoDropped;
        entry.note = "DeepSpeed drops \"auto\" in this block";
      } else {
        value = "auto";
        entry.source = ValueSource::kAutoUnfilled;
      }
    } else if (auto coerced = coerce_value(field, member->value, block.strict)) {
      value = *coerced;
      entry.source = written_source(context, path, join_path(block.path, field.alias));
    } else {
      entry.note = "the written value is invalid (see the error); the default is shown";
    }
  }
  entry.value_json = value.dump();
  context.effective[pointer_of(path)] = value;
  context.resolved.push_back(std::move(entry));
}

ResolvedValue* find_resolved(ValidationContext& context, const std::string& path) {
  for (auto& entry : context.resolved)
    if (entry.path == path) return &entry;
  return nullptr;
}

}  // namespace

void set_derived(ValidationContext& context, const std::string& path, const nlohmann::json& value,
                 const std::string& note) {
  context.effective[pointer_of(path)] = value;
  if (ResolvedValue* entry = find_resolved(context, path)) {
    entry->value_json = value.dump();
    entry->source = ValueSource::kDerived;
    entry->note = note;
  } else {
    context.resolved.push_back({path, value.dump(), ValueSource::kDerived, {}, note});
  }
}

namespace {

void derive_values(ValidationContext& context) {
  auto& effective = context.effective;
  // overlap_comm: None resolves to stage == 3 (DeepSpeedZeroConfig's validator), not the
  // documented false.
  const auto& zero = effective["zero_optimization"];
  if (zero["overlap_comm"].is_null()) {
    const bool stage3 = zero["stage"].is_number_integer() && zero["stage"].get<int>() == 3;
    set_derived(context, "zero_optimization.overlap_comm", stage3, "unset: resolves to stage == 3");
  }
  // flops_profiler.enabled forces the global timers on (engine.py).
  if (effective["flops_profiler"]["enabled"] == true && effective["wall_clock_breakdown"] != true)
    set_derived(context, "wall_clock_breakdown", true, "forced on by flops_profiler.enabled");
  // comms_logger: the block's presence, not its "enabled", turns logging on (comm/config.py:22).
  if (context.written("comms_logger") && effective["comms_logger"]["enabled"] != true)
    set_derived(context, "comms_logger.enabled", true,
           "the block is present, which turns logging on whatever \"enabled\" says");
}

}  // namespace

void resolve_config(ValidationContext& context) {
  for (const auto& block : config_blocks(context.options().deepspeed_version)) {
    const ConfigNode* node = context.node_at(block.path);
    if (!node && !block.listed_when_absent) continue;
    for (const auto& field : block.fields) {
      // optimizer/scheduler params are resolved per type by their own rules.
      if ((block.path == "optimizer" || block.path == "scheduler") && field.name == "params") continue;
      resolve_field(context, block, field, node);
    }
  }
  derive_values(context);
}

}  // namespace shardscope::configs
