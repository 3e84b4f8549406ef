// Field lessons rather than DeepSpeed errors (but for an unfilled "auto" outside a pydantic block,
// which DeepSpeed fails on when it uses it): the "auto" pydantic drops, default flips that change a run
// without a word (0.19.3 clipping and bf16 overflow check, 0.19.5 pinned offload memory), and
// under --strict the house policies (explicit clipping, one precision mode).
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

/// The batch keys' "auto" is the batch rules' error (DeepSpeed's exact TypeError).
bool is_batch_key(const std::string& path) {
  return path == "train_batch_size" || path == "train_micro_batch_size_per_gpu" ||
         path == "gradient_accumulation_steps";
}

void check_unfilled_auto(ValidationContext& context) {
  for (const auto& entry : context.resolved) {
    if (entry.source == ValueSource::kAutoDropped) {
      context.warning("unfilled-auto", entry.path,
                      entry.path + " is \"auto\" and nothing fills it: DeepSpeed drops \"auto\" in "
                      "this block and uses the default " + entry.value_json +
                      " (the Hugging Face Trainer fills it from its TrainingArguments)",
                      "pass --set " + entry.path + "=VALUE to check the value your run will use");
    } else if (entry.source == ValueSource::kAutoUnfilled && !is_batch_key(entry.path)) {
      // DeepSpeed keeps the string and its first use of it raises (gradient_clipping: TypeError
      // "'>' not supported between instances of 'str' and 'float'" in deepspeed.initialize).
      context.error("unfilled-auto", entry.path,
                    entry.path + " is \"auto\" and nothing fills it: DeepSpeed given this config directly "
                    "keeps the string \"auto\" and fails when it uses it (a TypeError or ValueError in "
                    "deepspeed.initialize or the first step); only the Hugging Face Trainer fills it",
                    "check it as the Trainer runs it: --hf-trainer [K=V,...] (its TrainingArguments), or "
                    "pass --set " + entry.path + "=VALUE");
    }
  }
}

void check_offload_pin_memory(ValidationContext& context, const std::string& block,
                              OffloadDevice device) {
  if (device == OffloadDevice::kNone || context.written(block + ".pin_memory")) return;
  context.warning("default-flip", block,
                  "pin_memory is not set: since DeepSpeed 0.19.5 offload buffers are pinned by "
                  "default (it used to be false), which can fail with out-of-memory or memlock "
                  "limits (ulimit -l) after an upgrade",
                  "write \"pin_memory\": true to keep it, or false on hosts with little RAM");
}

void check_default_flips(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (!context.written("gradient_clipping") && !context.options().strict)
    context.warning("default-flip", "",
                    "gradient_clipping is not set: since DeepSpeed 0.19.3 it defaults to 1.0 "
                    "(gradients are clipped); older versions did not clip",
                    "write \"gradient_clipping\": 1.0 to keep clipping, or 0.0 to turn it off");
  check_offload_pin_memory(context, "zero_optimization.offload_optimizer", c.zero.offload_optimizer.device);
  check_offload_pin_memory(context, "zero_optimization.offload_param", c.zero.offload_param.device);
  if (c.bf16.enabled && !context.written("bf16.check_grad_overflow"))
    context.warning("default-flip", "bf16",
                    "bf16.check_grad_overflow is not set: since DeepSpeed 0.19.3 bf16 runs check "
                    "gradients for inf/nan every step and skip the step on overflow (extra "
                    "reduction per step)",
                    "write \"check_grad_overflow\": true to keep it, or false for the old behaviour");
}

void check_strict_policies(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (!context.written("gradient_clipping"))
    context.error("policy-explicit-clipping", "",
                  "--strict: gradient_clipping must be written (its default flipped to 1.0 in "
                  "DeepSpeed 0.19.3)",
                  "add \"gradient_clipping\": 1.0 (or 0.0 to turn clipping off)");
  int modes = 0;
  std::string names;
  auto count = [&](bool on, const char* name) {
    if (!on) return;
    ++modes;
    names += names.empty() ? name : std::string(", ") + name;
  };
  count(c.fp16.enabled, "fp16");
  count(c.bf16.enabled, "bf16");
  count(c.amp.enabled, "amp");
  count(c.torch_autocast.enabled, "torch_autocast");
  const bool already_error = modes == 2 && c.fp16.enabled && c.bf16.enabled;
  if (modes > 1 && !already_error)
    context.error("policy-one-precision", c.torch_autocast.enabled ? "torch_autocast" : "amp",
                  "--strict: more than one precision mode is enabled (" + names + ")",
                  "enable exactly one of fp16, bf16, amp and torch_autocast");
}

}  // namespace

void check_policy_rules(ValidationContext& context) {
  check_unfilled_auto(context);
  check_default_flips(context);
  if (context.options().strict) check_strict_policies(context);
}

}  // namespace shardscope::configs
