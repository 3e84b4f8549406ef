#pragma once
// One row of the estimate: a ZeRO plan with its model states, buffers and communication, the
// totals per GPU / CPU / NVMe, and whether it fits the given memory.

#include <optional>

#include "estimator/activations.hpp"
#include "estimator/buffers.hpp"
#include "estimator/communication.hpp"
#include "estimator/host_memory.hpp"
#include "estimator/model_states.hpp"
#include "estimator/peak_memory.hpp"

namespace shardscope::estimator {

struct PlanEstimate {
  ZeroPlan plan;
  ModelStatesEstimate states;
  BufferEstimate buffers;
  CommunicationEstimate communication;
  PeakMemoryEstimate peak;              ///< the engine's peak, its reserved and device-level figures
  HostMemoryEstimate host;              ///< one rank's host memory as the engine allocates it
  double gpu_total_bytes = 0;           ///< the allocator's peak per GPU (peak.allocated_bytes)
  double cpu_total_bytes_per_node = 0;  ///< host peak per node: each rank's (host) + CPU checkpoints
  double nvme_bytes_per_node = 0;
  std::optional<bool> fits_gpu;  ///< peak.device_upper_bytes within the GPU less the margin; unset without GPU memory
  std::optional<bool> fits_cpu;  ///< unset when no CPU memory was given
  std::optional<long long> max_micro_batch;  ///< largest micro-batch whose activations still fit
  bool fits() const { return fits_gpu.value_or(false) && fits_cpu.value_or(true); }
};

/// Everything for one plan; `activations` is shared by all plans (ZeRO does not shard them).
PlanEstimate estimate_plan(const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& options,
                           const ActivationEstimate& activations, std::optional<double> bandwidth,
                           const std::string& bandwidth_source);

}  // namespace shardscope::estimator
