#include "estimator/stage3_residency.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace shardscope::estimator {
namespace {

/// One entry of the engine model's layers(): the group it gathers (a tied head reuses its
/// embedding's) and that group's elements.
struct Layer {
  int group = 0;
  double numel = 0;
};

/// The engine's GPT-2 and Llama models run: token embedding, learned positions (GPT-2), the
/// blocks, the final norm, then the head (the token embedding's group when tied).
std::vector<Layer> layer_sequence(const ParameterBreakdown& b, const TransformerShape& shape) {
  std::vector<Layer> layers;
  int next = 0;
  const int token = next++;
  layers.push_back({token, b.token_embedding});
  if (shape.learned_positions && b.position_embedding > 0) layers.push_back({next++, b.position_embedding});
  for (long long i = 0; i < shape.layers; ++i) layers.push_back({next++, b.per_layer});
  if (b.final_norm > 0) layers.push_back({next++, b.final_norm});
  layers.push_back(b.lm_head > 0 ? Layer{next++, b.lm_head} : Layer{token, b.token_embedding});
  return layers;
}

/// zero_gather.cpp's reuse_distance_after_forward: elements run before the group is used again.
double reuse_distance(const std::vector<Layer>& layers, std::size_t index) {
  double distance = 0;
  for (std::size_t j = index + 1; j < layers.size(); ++j) {
    if (layers[j].group == layers[index].group) return distance;  // a tied head, later in this forward
    distance += layers[j].numel;
  }
  return 2 * distance;
}

}  // namespace

std::optional<double> stage3_kept_after_forward(const ModelDescription& model, const ZeroBuckets& buckets) {
  if (!model.breakdown || !model.shape) return std::nullopt;
  const auto layers = layer_sequence(*model.breakdown, *model.shape);
  std::map<int, bool> gathered;
  double live = 0;
  auto gather = [&](const Layer& l) {
    if (!gathered[l.group]) gathered[l.group] = true, live += l.numel;
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    gather(layers[i]);
    // The forward prefetch: the next layers while they fit the bucket and the live cap.
    double budget = buckets.prefetch_bucket_size;
    for (std::size_t j = i + 1; j < layers.size(); ++j) {
      if (layers[j].numel > budget || live + layers[j].numel > buckets.max_live_parameters) break;
      budget -= layers[j].numel;
      gather(layers[j]);
    }
    const bool keep = reuse_distance(layers, i) <= buckets.max_reuse_distance && live <= buckets.max_live_parameters;
    if (!keep && layers[i].numel > buckets.param_persistence_threshold && gathered[layers[i].group]) {
      gathered[layers[i].group] = false;
      live -= layers[i].numel;
    }
  }
  return live;
}

std::optional<double> stage3_largest_group(const ModelDescription& model) {
  if (!model.breakdown) return std::nullopt;
  const auto& b = *model.breakdown;
  return std::max({b.token_embedding, b.position_embedding, b.per_layer, b.final_norm, b.lm_head});
}

std::optional<std::vector<double>> stage3_group_sizes(const ModelDescription& model) {
  if (!model.breakdown || !model.shape) return std::nullopt;
  std::vector<double> sizes;
  std::set<int> seen;
  for (const auto& layer : layer_sequence(*model.breakdown, *model.shape))
    if (seen.insert(layer.group).second) sizes.push_back(layer.numel);
  return sizes;
}

}  // namespace shardscope::estimator
