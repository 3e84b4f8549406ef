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

}  // namespace

void check_precision_rules(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  if (c.fp16.enabled && c.bf16.enabled)
    context.error("precision-conflict", "bf16.enabled",
                  "bfloat16 and fp16 modes cannot be simultaneously enabled",
                  "keep one: bf16 on Ampere or newer GPUs, fp16 with loss scaling otherwise");
  check_fp16_scaler(context, c.fp16);
  check_master_weights(context, c);
  // 0.19.8 removed "amp" altogether (a removed-key error); 0.19.7's engine asserts this.
  if (c.amp.enabled && c.zero.stage > 0 && context.options().deepspeed_version == DeepSpeedVersion::k0_19_7)
    context.error("amp-with-zero", "amp.enabled",
                  "Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which "
                  "performs similar to amp opt_mode=O2",
                  "replace the amp block with \"fp16\": {\"enabled\": true} or \"bf16\"");
}

}  // namespace shardscope::configs
