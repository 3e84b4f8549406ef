#include "estimator/plan_estimate.hpp"

#include <algorithm>
#include <cmath>

namespace shardscope::estimator {
namespace {

// Fit against memory less the margin; the largest micro-batch follows because every activation
// term is linear in the micro-batch.
void apply_fit(PlanEstimate& p, const EstimateOptions& options, const ActivationEstimate& activations) {
  const ClusterSettings& c = options.cluster;
  if (c.gpu_memory_bytes) {
    const double usable = *c.gpu_memory_bytes * (1 - c.margin);
    p.fits_gpu = p.peak.device_upper_bytes <= usable;
    if (activations.available && activations.bytes_per_sample > 0) {
      // device_upper = allocated x the upper fragmentation + context, and allocated = what is not
      // activations + activations, which grow with the micro-batch.
      const double room = (usable - p.peak.context_bytes) / p.peak.upper_fragmentation -
                          (p.peak.allocated_bytes - activations.total_bytes);
      // Clamped before the cast: a huge --gpu-mem over a tiny sample must not overflow long long.
      const double fitting = room > 0 ? std::floor(room / activations.bytes_per_sample) : 0;
      p.max_micro_batch = static_cast<long long>(std::min(fitting, 1e15));
    }
  }
  if (c.cpu_memory_bytes) p.fits_cpu = p.cpu_total_bytes_per_node <= *c.cpu_memory_bytes * (1 - c.margin);
}

}  // namespace

PlanEstimate estimate_plan(const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& options,
                           const ActivationEstimate& activations, std::optional<double> bandwidth,
                           const std::string& bandwidth_source) {
  PlanEstimate p;
  p.plan = plan;
  p.states = estimate_model_states(model.total_params, plan, options.precision, options.cluster);
  p.buffers = estimate_buffers(model, plan, options);
  p.communication = estimate_communication(model.total_params, plan, options, bandwidth, bandwidth_source);
  p.peak = estimate_peak(model, plan, options, activations, p.buffers);
  p.gpu_total_bytes = p.peak.allocated_bytes;
  p.host = estimate_host_memory(model, plan, options);
  p.cpu_total_bytes_per_node = p.host.peak_bytes * options.cluster.gpus_per_node + activations.cpu_bytes_per_node;
  p.nvme_bytes_per_node = p.host.nvme_bytes * options.cluster.gpus_per_node;
  apply_fit(p, options, activations);
  return p;
}

}  // namespace shardscope::estimator
