// Checks of the top-level runtime keys and the tool blocks: what DeepSpeed warns about at start-up
// and what it silently gets wrong (the comms_logger block that logs even when "enabled": false).
#include "configs/python_repr.hpp"
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

/// 0.19.8's data_types.keep_in_fp32_modules: "auto" or a list of name patterns, else its
/// DeepSpeedConfigError (runtime/config.py:563-567).
void check_keep_in_fp32_modules(ValidationContext& context) {
  if (context.options().deepspeed_version != DeepSpeedVersion::k0_19_8) return;
  const ConfigNode* node = context.node_at("data_types.keep_in_fp32_modules");
  if (!node || (node->is_string() && node->string_value == "auto")) return;
  bool ok = node->kind == ConfigNode::Kind::kArray;
  for (const auto& item : node->items) ok = ok && item.is_string();
  if (ok) return;
  const std::string repr = node->is_string() ? "'" + node->string_value + "'" : python_str(*node);
  context.error("wrong-type", "data_types.keep_in_fp32_modules",
                "DeepSpeedConfigError: data_types.keep_in_fp32_modules must be \"auto\" or a list of name "
                "patterns, got " + repr,
                "write \"auto\" (the model's _keep_in_fp32_modules), [] (keep nothing) or [\"norm\", ...]");
}

}  // namespace

void check_runtime_rules(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (c.vocabulary_size && *c.vocabulary_size % 8 != 0)
    context.warning("vocabulary-size", "vocabulary_size",
                    "vocabulary_size " + std::to_string(*c.vocabulary_size) +
                        " is not a multiple of 8; tensor cores run the embedding and output layers "
                        "slower (DeepSpeed warns too)",
                    "pad the vocabulary to a multiple of 8 (64 is better)");
  if (c.comms_logger.block_present && !c.comms_logger.enabled_as_written)
    context.warning("comms-logger-disabled", "comms_logger",
                    "a comms_logger block turns communication logging on even with \"enabled\": "
                    "false (DeepSpeed reads the block's presence, comm/config.py), and every logged "
                    "collective synchronizes the device, which defeats overlap_comm",
                    "remove the comms_logger block to turn logging off");
  if (c.flops_profiler.enabled && !context.written("wall_clock_breakdown"))
    context.report(Severity::kNote, "forced-timers", "flops_profiler.enabled",
                   "flops_profiler.enabled forces wall_clock_breakdown on (global timers)", "");
  if (c.prescale_gradients && c.gradient_predivide_factor != 1.0)
    context.warning("ignored-setting", "gradient_predivide_factor",
                    "gradient_predivide_factor is ignored when prescale_gradients is true",
                    "remove one of the two");
  check_keep_in_fp32_modules(context);
}

}  // namespace shardscope::configs
