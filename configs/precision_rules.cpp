// Precision checks DeepSpeed makes at config time (runtime/config.py, precision_config.py) and
// at engine start-up (engine.py), with its messages.
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

void check_fp16_scaler(ValidationContext& context, const Fp16Config& fp16) {
  // DeepSpeedFP16Config's validators run whether or not fp16 is enabled; the window and the
  // minimum matter only for dynamic scaling (loss_scale == 0).
  if (fp16.loss_scale != 0) return;
  if (fp16.loss_scale_window <= 0)
    context.error("out-of-range", "fp16.loss_scale_window",
                  "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled "
                  "(loss_scale=0)", "the default is 1000");
  if (fp16.min_loss_scale <= 0)
    context.error("out-of-range", "fp16.min_loss_scale",
                  "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled "
                  "(loss_scale=0)", "the default is 1");
}

void check_master_weights(ValidationContext& context, const ResolvedConfig& c) {
  const bool zero = c.zero.stage >= 1;
  if (c.fp16.fp16_master_weights_and_grads && !zero)
    context.error("master-weights-stage", "fp16.fp16_master_weights_and_grads",
                  "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.",
                  "set zero_optimization.stage to 1, 2 or 3, or remove the key");
  if (c.bf16.bf16_master_weights_and_grads && !zero)
    context.error("master-weights-stage", "bf16.bf16_master_weights_and_grads",
                  "Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.",
                  "set zero_optimization.stage to 1, 2 or 3, or remove the key");
  if (c.bf16.bf16_optimizer_states && !zero)
    context.error("master-weights-stage", "bf16.bf16_optimizer_states",
                  "bf16_optimizer_states is only supported with ZeRO Stage 1, 2, or 3.",
                  "set zero_optimization.stage to 1, 2 or 3, or remove the key");
  if (c.bf16.bf16_optimizer_states && !c.bf16.bf16_master_weights_and_grads)
    context.error("bf16-optimizer-states", "bf16.bf16_optimizer_states",
                  "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
                  "add \"bf16_master_weights_and_grads\": true to the bf16 block");
}

/// bf16 without ZeRO and with no optimizer block: the engine wraps DeepSpeed's DummyOptim in
/// BF16_Optimizer (engine.py's `elif self.bfloat16_enabled()` branch), which builds no bf16 group
/// for it, so the first optimizer step fails the bare assert in get_grads_for_norm. A script that
/// passes its own optimizer to deepspeed.initialize never takes that branch, hence the hint.
void check_bf16_without_optimizer(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (!c.bf16.enabled || c.fp16.enabled || c.zero.stage > 0 || c.optimizer.present) return;
  const char* line = context.options().deepspeed_version == DeepSpeedVersion::k0_19_8 ? "562" : "423";
  context.error("bf16-without-optimizer", "bf16.enabled",
                std::string("AssertionError at the first optimizer step (engine init left BF16_Optimizer "
                            "over a DummyOptim): assert len(self.bf16_groups) == "
                            "len(self.optimizer.param_groups) (runtime/bf16_optimizer.py:") +
                    line + ", get_grads_for_norm): bf16 without ZeRO and with no \"optimizer\" block",
                "add an \"optimizer\" block, pass optimizer= to deepspeed.initialize, or set "
                "zero_optimization.stage to 1, 2 or 3");
}

/// ZeRO 1 and 2 with no optimizer block: _configure_zero_optimizer puts a DummyOptim in its place
/// and asserts it is not one (engine.py:2664 in 0.19.7, :2659 in 0.19.8). Stage 3 takes the
/// DummyOptim (ZeRO-3 inference).
void check_zero_without_optimizer(ValidationContext& context) {
  const int stage = context.config.zero.stage;
  if (stage < 1 || stage > 2 || context.config.optimizer.present) return;
  const char* line = context.options().deepspeed_version == DeepSpeedVersion::k0_19_8 ? "2659" : "2664";
  context.error("zero-requires-optimizer", "zero_optimization.stage",
                "AssertionError at engine init: zero stage " + std::to_string(stage) +
                    " requires an optimizer (runtime/engine.py:" + line + ", _configure_zero_optimizer)",
                "add an \"optimizer\" block, pass optimizer= to deepspeed.initialize, or use stage 3 "
                "(which runs without one)");
}

/// What follows from there being no optimizer, unless the script passes its own to
/// deepspeed.initialize: the Hugging Face Trainer does, so --hf-trainer skips these, as do callers
/// that bring their own (ValidateOptions::own_optimizer).
void check_missing_optimizer(ValidationContext& context) {
  if (context.options().hf_trainer || context.options().own_optimizer) return;
  check_bf16_without_optimizer(context);
  check_zero_without_optimizer(context);
}

}  // namespace

void check_precision_rules(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (c.fp16.enabled && c.bf16.enabled)
    context.error("precision-conflict", "bf16.enabled",
                  "bfloat16 and fp16 modes cannot be simultaneously enabled",
                  "keep one: bf16 on Ampere or newer GPUs, fp16 with loss scaling otherwise");
  check_fp16_scaler(context, c.fp16);
  check_master_weights(context, c);
  check_missing_optimizer(context);
  // 0.19.8 removed "amp" altogether (a removed-key error); 0.19.7's engine asserts this.
  if (c.amp.enabled && c.zero.stage > 0 && context.options().deepspeed_version == DeepSpeedVersion::k0_19_7)
    context.error("amp-with-zero", "amp.enabled",
                  "Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which "
                  "performs similar to amp opt_mode=O2",
                  "replace the amp block with \"fp16\": {\"enabled\": true} or \"bf16\"");
}

}  // namespace shardscope::configs
