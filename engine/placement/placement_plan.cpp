#include "engine/placement/placement_plan.hpp"

#include <stdexcept>

namespace shardscope::engine {
namespace {

// DeepSpeed's assertion (runtime/zero/partition_parameters.py:1225) when a remote device has no path; its
// f-string formats the enum member, so 0.19.7 prints "OffloadDeviceEnum.nvme", not "nvme".
const char* kNvmePathMissing = "\"nvme_path\" in DeepSpeed Config cannot be None if remote device is OffloadDeviceEnum.nvme";

std::string require_nvme_path(const std::optional<std::string>& path, const char* block) {
  if (!path || path->empty())
    throw std::invalid_argument(std::string(kNvmePathMissing) + " (zero_optimization." + block +
                                ".nvme_path): add \"nvme_path\": \"/local_nvme\", a folder on a fast local disk");
  return *path;
}

Tier optimizer_tier(const configs::ZeroConfig& z, PlacementPlan& plan) {
  using configs::OffloadDevice;
  if (z.stage == 0 || z.offload_optimizer.device == OffloadDevice::kNone) return Tier::kDevice;
  if (z.offload_optimizer.device == OffloadDevice::kCpu) return Tier::kHost;
  if (z.stage < 3) {
    // DeepSpeed's stage 1-2 optimizer knows only "offload or not": any device but "none" is CPU offload.
    plan.notes.push_back("offload_optimizer.device \"nvme\" at ZeRO stage " + std::to_string(z.stage) +
                         " runs as CPU offload, as DeepSpeed's stage 1-2 optimizer does (NVMe offload is stage 3)");
    return Tier::kHost;
  }
  return Tier::kNvme;
}

}  // namespace

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::kDevice: return "device";
    case Tier::kHost: return "host";
    case Tier::kNvme: return "nvme";
  }
  return "device";
}

int PlacementPlan::first_offloaded_group(int groups) const {
  if (!offloads_optimizer()) return groups;
  return static_cast<int>((1.0 - offload_ratio) * static_cast<double>(groups));
}

aio::AioSettings aio_settings_from_config(const configs::AioConfig& c) {
  aio::AioSettings s;
  s.block_size = c.block_size;
  s.queue_depth = c.queue_depth;
  s.intra_op_parallelism = c.intra_op_parallelism;
  s.single_submit = c.single_submit;
  s.overlap_events = c.overlap_events;
  return s;
}

PlacementPlan plan_placement(const configs::ResolvedConfig& config, bool cuda) {
  const auto& z = config.zero;
  PlacementPlan plan;
  plan.stage = z.stage;
  plan.cuda = cuda;
  plan.optimizer = optimizer_tier(z, plan);
  if (z.stage == 3) {
    using configs::OffloadDevice;
    plan.param_shard = z.offload_param.device == OffloadDevice::kCpu    ? Tier::kHost
                       : z.offload_param.device == OffloadDevice::kNvme ? Tier::kNvme
                                                                         : Tier::kDevice;
  }
  const double ratio = z.offload_optimizer.ratio;
  if (ratio < 0.0 || ratio > 1.0)
    throw std::invalid_argument("zero_optimization.offload_optimizer.ratio " + std::to_string(ratio) +
                                " is outside [0, 1]: it is the share of the optimizer state to offload");
  if (ratio < 1.0 && plan.offloads_optimizer() && z.stage != 3)
    throw std::invalid_argument("Partial offloading only supported for ZeRO Stage 3. "
                                "(zero_optimization.offload_optimizer.ratio)");
  plan.offload_ratio = plan.offloads_optimizer() ? ratio : 1.0;
  plan.pin_optimizer = z.offload_optimizer.pin_memory;
  plan.pin_params = z.offload_param.pin_memory;
  plan.aio = aio_settings_from_config(config.aio);
  if (plan.optimizer == Tier::kNvme) {
    const auto& o = z.offload_optimizer;
    plan.optimizer_swap = OptimizerSwapPlan{require_nvme_path(o.nvme_path, "offload_optimizer"), o.buffer_count,
                                            o.pipeline_read, o.pipeline_write, z.sub_group_size};
  }
  if (plan.param_shard == Tier::kNvme) {
    const auto& p = z.offload_param;
    plan.param_swap = ParamSwapPlan{require_nvme_path(p.nvme_path, "offload_param"), p.buffer_count, p.buffer_size,
                                    p.max_in_cpu};
  }
  if (config.aio.use_gds)
    plan.notes.push_back("aio.use_gds is true: GPUDirect Storage is not built; swapping goes through pinned host "
                         "memory");
  return plan;
}

}  // namespace shardscope::engine
