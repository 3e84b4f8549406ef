#pragma once
// Model states (parameters, gradients, master weights, optimizer states) per GPU, per node's CPU
// and per node's NVMe for one ZeRO plan: the ZeRO paper's arithmetic (Rajbhandari et al. 2020,
// section 5), part by part, with no buffer factor. Mixed-precision Adam is 2 + 2 + 4 + 8 = 16 B
// per parameter; stage 1 shards the 12 B of master + moments, stage 2 also the 2 B of gradients,
// stage 3 also the 2 B of parameters. DeepSpeed's own estimate_zero* arithmetic, which differs,
// is in deepspeed_formulas.hpp.

#include <string>

#include "estimator/estimate_options.hpp"

namespace shardscope::estimator {

/// One part of an estimate: its bytes and the arithmetic that gives them.
struct MemoryPart {
  double bytes = 0;
  std::string formula;  ///< e.g. "2 B/param x P / N = 2 x 7.00B / 8"
};

/// The four model-state parts, kept apart so measured memory can be set beside each.
struct ModelStateParts {
  MemoryPart params;
  MemoryPart gradients;
  MemoryPart master_params;
  MemoryPart optimizer_states;
  double total() const {
    return params.bytes + gradients.bytes + master_params.bytes + optimizer_states.bytes;
  }
};

/// Bytes per parameter of each state under a precision setting.
struct StateBytesPerParam {
  double params = 2;
  double gradients = 2;
  double master = 4;
  double optimizer = 8;
  double total() const { return params + gradients + master + optimizer; }
};

struct ModelStatesEstimate {
  ZeroPlan plan;
  StateBytesPerParam per_param;
  ModelStateParts gpu;            ///< per GPU
  ModelStateParts cpu_per_node;   ///< host RAM per node
  ModelStateParts nvme_per_node;  ///< NVMe per node (ZeRO-Infinity)
  double gpu_replicated_per_param = 0;  ///< B/param every GPU holds in full
  double gpu_sharded_per_param = 0;     ///< B/param divided by N on the GPU
  std::string gpu_rule;                 ///< "2 + 14/N B/param"
};

/// Bytes per parameter of params, gradients, master copy and optimizer states.
StateBytesPerParam state_bytes_per_param(const PrecisionSettings& precision);

/// Model states of `total_params` parameters under `plan` on the given cluster.
ModelStatesEstimate estimate_model_states(double total_params, const ZeroPlan& plan,
                                          const PrecisionSettings& precision,
                                          const ClusterSettings& cluster);

}  // namespace shardscope::estimator
