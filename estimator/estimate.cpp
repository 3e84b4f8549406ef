#include "estimator/estimate.hpp"

#include <algorithm>

#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::estimator {
namespace {

void validate_options(const EstimateOptions& o) {
  if (o.cluster.gpus_per_node <= 0 || o.cluster.nodes <= 0)
    throw EstimatorError("--gpus-per-node and --nodes must be positive, got " + std::to_string(o.cluster.gpus_per_node) +
                         " and " + std::to_string(o.cluster.nodes));
  if (o.workload.micro_batch <= 0) throw EstimatorError("micro-batch must be positive (--micro-batch)");
  if (o.workload.grad_accum <= 0) throw EstimatorError("gradient accumulation steps must be positive (--grad-accum)");
  if (o.workload.seq_len < 0) throw EstimatorError("sequence length must not be negative (--seq-len)");
  if (o.cluster.margin < 0 || o.cluster.margin >= 1) throw EstimatorError("margin must lie in [0, 1) (--margin)");
  if (o.deepspeed_buffer_factor <= 0) throw EstimatorError("the DeepSpeed buffer factor must be positive");
  if (o.requested_plan) validate_plan(*o.requested_plan);
}

// The per-GPU link bandwidth a step's collectives run at: the inter-node link when the ring
// leaves the node, else the given or catalog intra-node link.
std::optional<double> pick_bandwidth(const ClusterSettings& c, std::string& source) {
  if (c.nodes > 1) {
    if (c.inter_node_bandwidth) {
      source = "--inter-node-bandwidth";
      return c.intra_node_bandwidth ? std::min(*c.intra_node_bandwidth, *c.inter_node_bandwidth)
                                    : *c.inter_node_bandwidth;
    }
    source = "unknown across nodes (give --inter-node-bandwidth)";
    return std::nullopt;
  }
  if (c.intra_node_bandwidth) {
    source = "--bandwidth";
    return c.intra_node_bandwidth;
  }
  if (auto gpu = find_gpu(c.gpu_name); gpu && !c.gpu_name.empty()) {
    source = "catalog: " + gpu->name + " " + gpu->link + " (nominal)";
    return gpu->link_bandwidth;
  }
  source = "unknown (give --bandwidth or --gpu)";
  return std::nullopt;
}

std::vector<PlanEstimate> estimate_all(const ModelDescription& model, const EstimateOptions& options,
                                       const ActivationEstimate& activations) {
  std::string source;
  const std::optional<double> bandwidth = pick_bandwidth(options.cluster, source);
  std::vector<ZeroPlan> plans = ladder_plans();
  if (options.requested_plan) {
    bool listed = false;
    for (const auto& p : plans) listed = listed || p == *options.requested_plan;
    if (!listed) plans.push_back(*options.requested_plan);
  }
  std::vector<PlanEstimate> result;
  for (const auto& plan : plans) result.push_back(estimate_plan(model, plan, options, activations, bandwidth, source));
  return result;
}

}  // namespace

Estimate run_estimate(const ModelDescription& model, const EstimateOptions& options) {
  validate_options(options);
  Estimate e;
  e.model = model;
  e.options = options;
  const ClusterSettings& c = options.cluster;
  e.activations = estimate_activations(model, options.workload, options.precision.precision, c.gpus_per_node);
  e.plans = estimate_all(model, options, e.activations);
  e.deepspeed_zero2 = deepspeed_zero2_table(model.total_params, c.gpus_per_node, c.nodes, options.deepspeed_buffer_factor);
  e.deepspeed_zero3 = deepspeed_zero3_table(model.total_params, model.largest_layer_params, c.gpus_per_node, c.nodes,
                                            options.deepspeed_buffer_factor);
  std::vector<PlanEstimate> relaxed;
  if (e.activations.available && options.workload.checkpointing != ActivationCheckpointing::kFull) {
    EstimateOptions full = options;
    full.workload.checkpointing = ActivationCheckpointing::kFull;
    relaxed = estimate_all(model, full, estimate_activations(model, full.workload, full.precision.precision, c.gpus_per_node));
  }
  e.verdict = decide_verdict(e.plans, relaxed, options, model.total_params, e.activations);
  return e;
}

}  // namespace shardscope::estimator
