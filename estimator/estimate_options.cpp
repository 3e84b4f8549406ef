#include "estimator/estimate_options.hpp"

#include <algorithm>
#include <cctype>

#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

const char* offload_name(OffloadDevice device) {
  switch (device) {
    case OffloadDevice::kNone: return "none";
    case OffloadDevice::kCpu: return "cpu";
    case OffloadDevice::kNvme: return "nvme";
  }
  return "?";
}

const char* checkpointing_name(ActivationCheckpointing checkpointing) {
  switch (checkpointing) {
    case ActivationCheckpointing::kNone: return "none";
    case ActivationCheckpointing::kSelective: return "selective";
    case ActivationCheckpointing::kFull: return "full";
  }
  return "?";
}

std::string plan_name(const ZeroPlan& plan) {
  return "stage " + std::to_string(plan.stage) + ", offload_optimizer=" + offload_name(plan.offload_optimizer) +
         ", offload_param=" + offload_name(plan.offload_param);
}

OffloadDevice parse_offload(const std::string& text, const std::string& what) {
  if (text == "none") return OffloadDevice::kNone;
  if (text == "cpu") return OffloadDevice::kCpu;
  if (text == "nvme") return OffloadDevice::kNvme;
  throw EstimatorError(what + ": '" + text + "' is not an offload device; expected none, cpu or nvme");
}

Precision parse_precision(const std::string& text, const std::string& what) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  throw EstimatorError(what + ": '" + text + "' is not a precision; expected bf16, fp16 or fp32");
}

const char* attention_name(AttentionKernel attention) {
  return attention == AttentionKernel::kFused ? "fused" : "materialized";
}

AttentionKernel parse_attention(const std::string& text, const std::string& what) {
  if (text == "fused" || text == "flash" || text == "sdpa") return AttentionKernel::kFused;
  if (text == "materialized" || text == "materialised" || text == "eager") return AttentionKernel::kMaterialized;
  throw EstimatorError(what + ": '" + text + "' is not an attention kernel; expected fused (scaled_dot_product_attention, "
                       "the default) or materialized (the s x s scores kept, as eager attention does)");
}

ActivationCheckpointing parse_checkpointing(const std::string& text, const std::string& what) {
  if (text == "none") return ActivationCheckpointing::kNone;
  if (text == "selective") return ActivationCheckpointing::kSelective;
  if (text == "full") return ActivationCheckpointing::kFull;
  throw EstimatorError(what + ": '" + text + "' is not a checkpointing mode; expected none, selective or full");
}

int optimizer_states_per_param(const std::string& optimizer, const std::string& what) {
  std::string name = optimizer;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* two : {"adam", "adamw", "lamb", "fusedadam", "cpuadam", "deepspeedcpuadam"})
    if (name == two) return 2;
  for (const char* one : {"sgd", "adagrad", "lion", "muon"})
    if (name == one) return 1;
  throw EstimatorError(what + ": optimizer '" + optimizer +
                       "' is not known to the estimator; expected adam, adamw, lamb (2 states per "
                       "parameter) or sgd, adagrad, lion (1)");
}

void validate_plan(const ZeroPlan& plan) {
  if (plan.stage < 0 || plan.stage > 3)
    throw EstimatorError("ZeRO stage must be 0, 1, 2 or 3, got " + std::to_string(plan.stage));
  if (plan.stage == 0 && plan.offload_optimizer != OffloadDevice::kNone)
    throw EstimatorError("offload_optimizer needs ZeRO stage 1, 2 or 3 (stage 0 keeps the optimizer on the GPU)");
  if (plan.stage < 3 && plan.offload_param != OffloadDevice::kNone)
    throw EstimatorError("offload_param works with ZeRO stage 3 only (DeepSpeed ignores it at stage " +
                         std::to_string(plan.stage) + "); use stage 3 or drop offload_param");
  if (plan.stage < 3 && plan.offload_optimizer == OffloadDevice::kNvme)
    throw EstimatorError("NVMe offload (ZeRO-Infinity) needs ZeRO stage 3; use offload_optimizer=cpu at stage " +
                         std::to_string(plan.stage));
}

}  // namespace shardscope::estimator
