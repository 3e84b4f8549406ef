#pragma once
// The answer to "will it fit, and on what?": which plans fit the GPU and CPU memory with the
// margin, the recommendation along the ladder (the lowest stage that fits without offload; then
// offload, CPU before NVMe, only when nothing else fits), and advice in plain words.

#include <optional>
#include <string>
#include <vector>

#include "estimator/plan_estimate.hpp"

namespace shardscope::estimator {

struct Verdict {
  bool has_gpu_memory = false;  ///< false: no --gpu-mem/--gpu, so no fit was judged
  double usable_gpu_bytes = 0;  ///< GPU memory less the margin
  std::optional<double> usable_cpu_bytes;
  std::optional<ZeroPlan> recommended;
  std::optional<bool> requested_fits;  ///< for the plan a config or --stage asked for
  std::string summary;                 ///< one sentence
  std::vector<std::string> advice;     ///< further actionable lines
};

/// The plans in ladder order: stages 0-3 without offload, then optimizer offload to CPU (stages
/// 1-3), parameter offload to CPU (stage 3), then NVMe (stage 3). Faster plans come first.
const std::vector<ZeroPlan>& ladder_plans();

/// Judges `plans` (in ladder order). `relaxed` are the same plans with full activation
/// checkpointing (empty if the model has no shape or checkpointing is already full); they feed
/// the advice when nothing fits.
Verdict decide_verdict(const std::vector<PlanEstimate>& plans, const std::vector<PlanEstimate>& relaxed,
                       const EstimateOptions& options, double total_params, const ActivationEstimate& activations);

}  // namespace shardscope::estimator
