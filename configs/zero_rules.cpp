// ZeRO checks: DeepSpeed's own errors (partial offload, NVMe path, allreduce "sum" at stage 3,
// legacy stage 1) and warnings for settings it accepts but ignores or that silently cost speed.
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

void check_offload(ValidationContext& context, const ZeroConfig& zero) {
  const auto& opt = zero.offload_optimizer;
  if (opt.ratio < 1.0 && zero.stage != 3)
    context.error("partial-offload-stage", "zero_optimization.offload_optimizer.ratio",
                  "Partial offloading only supported for ZeRO Stage 3. (ratio is " +
                      nlohmann::json(opt.ratio).dump() + " at stage " + std::to_string(zero.stage) + ")",
                  "use stage 3, or remove \"ratio\" to offload the whole optimizer");
  if (opt.super_offload && zero.stage != 3)
    context.warning("stage3-only", "zero_optimization.offload_optimizer.super_offload",
                    "super_offload works only with ZeRO stage 3; at stage " +
                        std::to_string(zero.stage) + " it has no effect", "use stage 3 or remove it");
  const char* nvme_message =
      "\"nvme_path\" in DeepSpeed Config cannot be None if remote device is OffloadDeviceEnum.nvme";
  if (opt.device == OffloadDevice::kNvme && !opt.nvme_path)
    context.error("nvme-path-missing", "zero_optimization.offload_optimizer.device", nvme_message,
                  "add \"nvme_path\": \"/local_nvme\" (a fast local disk) to offload_optimizer");
  if (zero.offload_param.device == OffloadDevice::kNvme && !zero.offload_param.nvme_path)
    context.error("nvme-path-missing", "zero_optimization.offload_param.device", nvme_message,
                  "add \"nvme_path\": \"/local_nvme\" (a fast local disk) to offload_param");
  if (zero.offload_param.device != OffloadDevice::kNone && zero.stage < 3)
    context.warning("offload-param-ignored", "zero_optimization.offload_param",
                    "offload_param is valid only with stage 3; DeepSpeed accepts it at stage " +
                        std::to_string(zero.stage) + " and ignores it, so parameters stay on the GPU",
                    "use stage 3 to offload parameters, or remove offload_param");
  if (opt.device != OffloadDevice::kNone && zero.stage == 0)
    context.warning("offload-optimizer-ignored", "zero_optimization.offload_optimizer",
                    "offload_optimizer needs ZeRO stage 1, 2 or 3; at stage 0 it is ignored",
                    "set zero_optimization.stage (2 is the usual choice with CPU offload)");
}

// Optimizer state tensors DeepSpeed's swapper moves per sub-group besides the fp32 master and
// the gradient buffer (runtime/swap_tensor/pipelined_optimizer_swapper.py: num_tensors + 1).
int swapped_state_tensors(const OptimizerConfig& optimizer) {
  switch (optimizer.kind) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
    case OptimizerKind::kLamb: return 2;
    case OptimizerKind::kLion:
    case OptimizerKind::kAdagrad: return 1;
    default: return 2;
  }
}

// NVMe offload (ZeRO-Infinity): DeepSpeed's stage 1-2 optimizer knows only "offload or not", and
// the swap settings do nothing without an NVMe device.
void check_nvme_offload(ValidationContext& context, const ResolvedConfig& c) {
  const ZeroConfig& zero = c.zero;
  const auto& opt = zero.offload_optimizer;
  if (opt.device == OffloadDevice::kNvme && (zero.stage == 1 || zero.stage == 2))
    context.warning("nvme-below-stage3", "zero_optimization.offload_optimizer.device",
                    "offload_optimizer.device \"nvme\" at stage " + std::to_string(zero.stage) +
                        ": DeepSpeed's stage 1-2 optimizer treats every device but \"none\" as CPU offload, so the "
                        "optimizer state goes to CPU memory and nvme_path is not used",
                    "use stage 3 for NVMe offload (ZeRO-Infinity), or write \"device\": \"cpu\"");
  const auto unused = [&](const std::string& block, const char* key, bool nvme) {
    const std::string path = "zero_optimization." + block + "." + key;
    if (!nvme && context.written(path))
      context.warning("nvme-only", path,
                      std::string(key) + " only affects NVMe offload; with " + block + ".device not \"nvme\" " +
                          "DeepSpeed ignores it",
                      "remove it, or set \"device\": \"nvme\" and an nvme_path");
  };
  const bool opt_nvme = opt.device == OffloadDevice::kNvme && zero.stage == 3;
  for (const char* key : {"pipeline_read", "pipeline_write", "buffer_count", "fast_init"})
    unused("offload_optimizer", key, opt_nvme);
  const bool param_nvme = zero.offload_param.device == OffloadDevice::kNvme;
  for (const char* key : {"buffer_count", "buffer_size", "max_in_cpu"}) unused("offload_param", key, param_nvme);
  if (!opt_nvme || !(opt.pipeline_read || opt.pipeline_write)) return;
  const int per_sub_group = 2 + swapped_state_tensors(c.optimizer);
  const int needed = per_sub_group * (1 + (opt.pipeline_read ? 1 : 0) + (opt.pipeline_write ? 1 : 0));
  if (opt.buffer_count < needed)
    context.warning("swap-buffer-count", "zero_optimization.offload_optimizer.buffer_count",
                    "buffer_count " + std::to_string(opt.buffer_count) + " is too few for DeepSpeed's pipelined "
                        "swapping: its PipelinedOptimizerSwapper holds " + std::to_string(per_sub_group) +
                        " buffers per sub-group (the fp32 master, the gradient and the optimizer's states) for " +
                        std::to_string(needed / per_sub_group) + " sub-groups at once (the one stepping" +
                        (opt.pipeline_read ? ", the one read ahead" : "") +
                        (opt.pipeline_write ? ", the one written behind" : "") +
                        ") and stops with \"ran out of swap buffers, try increasing 'buffer_count'\"",
                    "set buffer_count to " + std::to_string(needed) + " (ShardScope keeps gradients in host memory "
                        "and needs one buffer per sub-group fewer)");
}

void check_overlap(ValidationContext& context, const ZeroConfig& zero) {
  if (zero.stage != 2 || zero.overlap_comm) return;
  if (!context.written("zero_optimization.overlap_comm") ||
      context.node_at("zero_optimization.overlap_comm")->is_auto())
    context.warning("overlap-comm-stage2", "zero_optimization.stage",
                    "overlap_comm is off at stage 2: DeepSpeed's code resolves an unset overlap_comm "
                    "to (stage == 3), so gradient reduction does not overlap the backward pass",
                    "add \"overlap_comm\": true to zero_optimization (the documented stage 2 setting)");
  else
    context.report(Severity::kNote, "overlap-comm-stage2", "zero_optimization.overlap_comm",
                   "overlap_comm is false at stage 2: gradient reduction waits for the backward pass",
                   "true overlaps them, at the cost of ~4.5x reduce_bucket_size extra memory");
}

void check_stage3_only(ValidationContext& context, const ResolvedConfig& c) {
  const ZeroConfig& zero = c.zero;
  if (zero.stage == 3) {
    if (c.gradient_allreduce_op == "sum")
      context.error("allreduce-sum-stage3", "gradient_allreduce_op",
                    "gradient_allreduce_op='sum' is not supported with ZeRO stage 3",
                    "use \"mean\" (the default) and scale the loss if you need a sum");
    if (zero.elastic_checkpoint)
      context.warning("deprecated-key", "zero_optimization.elastic_checkpoint",
                      "ZeRO-3 elastic checkpointing is deprecated and no longer supported. Use "
                      "Universal Checkpointing instead.", "remove elastic_checkpoint");
    return;
  }
  if (c.gradient_allreduce_op == "sum" && context.written("zero_optimization.zenflow"))
    context.error("allreduce-sum-stage3", "gradient_allreduce_op",
                  "gradient_allreduce_op='sum' is not supported with ZenFlow", "use \"mean\"");
  const char* zeropp[] = {"zero_hpz_partition_size", "zero_quantized_weights",
                          "zero_quantized_nontrainable_weights"};
  for (const char* key : zeropp) {
    const std::string path = std::string("zero_optimization.") + key;
    const bool on = std::string(key) == "zero_hpz_partition_size" ? zero.zero_hpz_partition_size > 1
                    : std::string(key) == "zero_quantized_weights" ? zero.zero_quantized_weights
                                                                   : zero.zero_quantized_nontrainable_weights;
    if (on)
      context.warning("stage3-only", path, std::string(key) + " is a ZeRO++ stage 3 feature; at stage " +
                      std::to_string(zero.stage) + " DeepSpeed ignores it", "use stage 3 or remove it");
  }
}

}  // namespace

void check_zero_rules(ValidationContext& context) {
  const ResolvedConfig& c = context.config;
  const ZeroConfig& zero = c.zero;
  if (const ConfigNode* legacy = context.node_at("zero_optimization.legacy_stage1");
      legacy && legacy->kind == ConfigNode::Kind::kBool && legacy->bool_value)
    context.error("legacy-stage1", "zero_optimization.legacy_stage1",
                  "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9. "
                  "Please downgrade to a version less than 0.5.9 if you need to use this deprecated "
                  "version of ZeRO.", "remove legacy_stage1");
  check_offload(context, zero);
  check_nvme_offload(context, c);
  check_overlap(context, zero);
  check_stage3_only(context, c);
  if (!c.managed_gradient_accumulation && zero.stage == 3 && zero.overlap_comm)
    context.warning("unmanaged-accumulation", "managed_gradient_accumulation",
                    "managed_gradient_accumulation false with ZeRO supports overlap_comm only at "
                    "stage 2; at stage 3 overlap_comm is on (its default there)",
                    "set \"overlap_comm\": false in zero_optimization, or keep managed accumulation");
}

}  // namespace shardscope::configs
