#include "estimator/model_states.hpp"

#include <cstdio>

#include "estimator/byte_units.hpp"

namespace shardscope::estimator {
namespace {

enum class Place { kGpu, kCpu, kNvme };

Place place_of(OffloadDevice device) {
  return device == OffloadDevice::kCpu ? Place::kCpu : device == OffloadDevice::kNvme ? Place::kNvme : Place::kGpu;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// One state placed somewhere: per GPU it is bpp x P (/ N when sharded); a node's CPU or NVMe
// holds the partitions of its G ranks, G x P / N = P / nodes.
struct Placement {
  double bytes_per_param = 0;
  Place place = Place::kGpu;
  bool sharded = false;
};

void add_part(ModelStatesEstimate& e, MemoryPart ModelStateParts::*part, const Placement& p,
              double total_params, const ClusterSettings& cluster, const std::string& what) {
  if (p.bytes_per_param == 0) return;
  const std::string params = format_count(total_params);
  MemoryPart result;
  if (p.place == Place::kGpu) {
    const double divisor = p.sharded ? cluster.total_gpus() : 1;
    result.bytes = p.bytes_per_param * total_params / divisor;
    result.formula = number(p.bytes_per_param) + " B/param x P" + (p.sharded ? " / N" : "") + " (" + what +
                     (p.sharded ? ", sharded" : ", replicated") + ") = " + number(p.bytes_per_param) + " x " +
                     params + (p.sharded ? " / " + std::to_string(cluster.total_gpus()) : "");
    e.gpu.*part = result;
    (p.sharded ? e.gpu_sharded_per_param : e.gpu_replicated_per_param) += p.bytes_per_param;
    return;
  }
  result.bytes = p.bytes_per_param * total_params / cluster.nodes;
  result.formula = number(p.bytes_per_param) + " B/param x P / nodes (" + what + ", the node's " +
                   std::to_string(cluster.gpus_per_node) + " partitions of P/N) = " + number(p.bytes_per_param) +
                   " x " + params + " / " + std::to_string(cluster.nodes);
  (p.place == Place::kCpu ? e.cpu_per_node : e.nvme_per_node).*part = result;
}

std::string rule_text(double replicated, double sharded) {
  if (replicated == 0 && sharded == 0) return "0 B/param";
  if (sharded == 0) return number(replicated) + " B/param";
  if (replicated == 0) return number(sharded) + "/N B/param";
  return number(replicated) + " + " + number(sharded) + "/N B/param";
}

}  // namespace

StateBytesPerParam state_bytes_per_param(const PrecisionSettings& precision) {
  StateBytesPerParam b;
  const bool fp32 = precision.precision == Precision::kFp32;
  b.params = fp32 ? 4 : 2;
  b.gradients = b.params;
  // fp32 training updates the parameters themselves: there is no separate master copy.
  b.master = fp32 ? 0 : precision.low_precision_master ? 2 : 4;
  const double state_bytes = (!fp32 && precision.low_precision_optimizer_states) ? 2 : 4;
  b.optimizer = precision.optimizer_states_per_param * state_bytes;
  return b;
}

ModelStatesEstimate estimate_model_states(double total_params, const ZeroPlan& plan,
                                          const PrecisionSettings& precision,
                                          const ClusterSettings& cluster) {
  validate_plan(plan);
  ModelStatesEstimate e;
  e.plan = plan;
  e.per_param = state_bytes_per_param(precision);
  const Place optimizer_place = place_of(plan.offload_optimizer);
  const bool offloaded_optimizer = optimizer_place != Place::kGpu;

  add_part(e, &ModelStateParts::params, {e.per_param.params, place_of(plan.offload_param), plan.stage >= 3},
           total_params, cluster, "16/32-bit parameters");
  // With the optimizer offloaded, stages 2-3 stream reduced gradients to a fp32 partition in host
  // memory (where CPU Adam reads them) and keep none on the GPU; stage 1 still holds full
  // gradients on the GPU until the step.
  if (!offloaded_optimizer || plan.stage == 1)
    add_part(e, &ModelStateParts::gradients, {e.per_param.gradients, Place::kGpu, plan.stage >= 2}, total_params,
             cluster, "gradients");
  // ZeRO-Infinity swaps that fp32 gradient partition out to NVMe with the optimizer states; the
  // engine keeps it in pinned host memory (the host table counts it there, and the NVMe column is
  // the engine's swap files), so the line says which is which.
  if (offloaded_optimizer)
    add_part(e, &ModelStateParts::gradients, {4, optimizer_place, true}, total_params, cluster,
             optimizer_place == Place::kNvme
                 ? "fp32 gradient partition for the offloaded optimizer; DeepSpeed swaps it to NVMe, ShardScope's "
                   "engine keeps it in pinned host memory, see the host lines"
                 : "fp32 gradient partition for the offloaded optimizer");
  add_part(e, &ModelStateParts::master_params, {e.per_param.master, optimizer_place, plan.stage >= 1}, total_params,
           cluster, "master weights");
  add_part(e, &ModelStateParts::optimizer_states, {e.per_param.optimizer, optimizer_place, plan.stage >= 1},
           total_params, cluster, std::to_string(precision.optimizer_states_per_param) + " optimizer state(s)");
  e.gpu_rule = rule_text(e.gpu_replicated_per_param, e.gpu_sharded_per_param);
  return e;
}

}  // namespace shardscope::estimator
