#pragma once
// The whole estimate for one model and one set of options: every plan of the ladder (plus the
// requested one), activations, DeepSpeed's own tables for comparison, and the verdict. This is
// what `shardscope estimate` prints and what the GUI shows; estimate_report.hpp formats it.

#include <vector>

#include "estimator/deepspeed_formulas.hpp"
#include "estimator/model_description.hpp"
#include "estimator/verdict.hpp"

namespace shardscope::estimator {

struct Estimate {
  ModelDescription model;
  EstimateOptions options;
  ActivationEstimate activations;
  std::vector<PlanEstimate> plans;  ///< ladder order
  std::vector<DeepSpeedEstimateRow> deepspeed_zero2;
  std::vector<DeepSpeedEstimateRow> deepspeed_zero3;
  Verdict verdict;
};

/// Runs every part of the estimate; throws EstimatorError for inconsistent options
/// (non-positive GPUs, a requested plan DeepSpeed would not run, ...).
Estimate run_estimate(const ModelDescription& model, const EstimateOptions& options);

}  // namespace shardscope::estimator
