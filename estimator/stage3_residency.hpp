#pragma once
// What ShardScope's stage-3 runtime keeps gathered at the end of the forward, from the model's
// layer sequence (engine/zero/zero_gather.cpp): a layer is kept after its forward when it comes
// back within stage3_max_reuse_distance elements (its backward follows every later layer's forward
// and backward, so the distance counts them twice) and the gathered total is within
// stage3_max_live_parameters; layers at or under stage3_param_persistence_threshold are never
// released. On one rank with the optimizer offloaded this, not the whole model, is what the
// gathered copies hold when the backward starts.

#include <optional>
#include <vector>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

/// Elements gathered when the backward begins, or nothing when the model's layers are unknown
/// (a bare parameter count).
std::optional<double> stage3_kept_after_forward(const ModelDescription& model, const ZeroBuckets& buckets);

/// The largest group the stage-3 runtime gathers as one (a layer with all its parameters), or
/// nothing when unknown.
std::optional<double> stage3_largest_group(const ModelDescription& model);

/// The elements of each group the stage-3 runtime gathers as one, in the order they run (a tied
/// head is not a group of its own), or nothing when the model's layers are unknown.
std::optional<std::vector<double>> stage3_group_sizes(const ModelDescription& model);

}  // namespace shardscope::estimator
