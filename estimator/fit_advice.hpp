#pragma once
// "It ran out of memory: what is the smallest change that fits?" For a plan that does not fit a
// GPU of a given capacity, the estimator tries single changes in the order they cost throughput
// least (a smaller micro-batch with more gradient accumulation for the same global batch, then
// activation checkpointing, a higher ZeRO stage, optimizer offload to the CPU, parameter offload)
// and, when no single change fits, the same changes together. The run doctor puts the answer in
// an out-of-memory finding (docs/doctor.md); each change comes as `shardscope train` flags.

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct FitChange {
  std::string what;                      ///< "micro-batch 32 -> 16, gradient accumulation 1 -> 2 (same global batch)"
  std::vector<std::string> train_flags;  ///< for `shardscope train`: --set KEY=VALUE ..., --activation-checkpointing
  double bound_bytes = 0;                ///< the changed plan's device-level bound (what a fit is judged on)
};

struct FitAdvice {
  double capacity_bytes = 0;
  double usable_bytes = 0;  ///< capacity less the margin
  double bound_bytes = 0;   ///< the plan as configured
  bool fits = false;        ///< the plan as configured fits: the OOM is not its model states and activations
  std::optional<FitChange> change;  ///< the smallest change that fits; none when nothing does
  std::vector<std::string> tried;   ///< each change tried and its bound, in order
};

/// Advice for `options.requested_plan` (required) of `model` on GPUs of `capacity_bytes`, with
/// `options.cluster.margin` kept free. Throws EstimatorError without a requested plan.
FitAdvice advise_fit(const ModelDescription& model, const EstimateOptions& options, double capacity_bytes);

}  // namespace shardscope::estimator
