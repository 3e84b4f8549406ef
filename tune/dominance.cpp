#include "tune/dominance.hpp"

#include <map>

#include "tune/candidate_config.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

constexpr const char* kOffloadOptimizerKey = "zero_optimization.offload_optimizer.device";
constexpr const char* kOffloadParamKey = "zero_optimization.offload_param.device";

bool is_offload_key(const std::string& key) { return key == kOffloadOptimizerKey || key == kOffloadParamKey; }

// The values one step less costly than `value` of a memory-saving key; none for another key.
std::vector<json> relaxations(const std::string& key, const json& value) {
  if (key == kCheckpointingKey) return value == json(true) ? std::vector<json>{false} : std::vector<json>{};
  if (!is_offload_key(key) || !value.is_string()) return {};
  if (value == "nvme") return {json("cpu"), json(nullptr)};
  if (value == "cpu") return {json(nullptr)};
  return {};
}

}  // namespace

std::vector<std::vector<std::size_t>> dominating_siblings(const std::vector<Assignment>& candidates) {
  std::map<std::string, std::size_t> by_key;
  for (std::size_t i = 0; i < candidates.size(); ++i) by_key.emplace(assignment_key(candidates[i]), i);
  std::vector<std::vector<std::size_t>> siblings(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i)
    for (std::size_t d = 0; d < candidates[i].size(); ++d) {
      const auto& [key, value] = candidates[i][d];
      for (const json& relaxed : relaxations(key, value)) {
        Assignment sibling = candidates[i];
        sibling[d].second = relaxed;
        const auto it = by_key.find(assignment_key(sibling));  // --space's "none" is null too
        if (it != by_key.end() && it->second != i) siblings[i].push_back(it->second);
      }
    }
  return siblings;
}

std::string relaxed_feature(const Assignment& candidate, const Assignment& sibling) {
  if (candidate.size() != sibling.size()) return {};
  std::string feature;
  for (std::size_t d = 0; d < candidate.size(); ++d) {
    const auto& [key, value] = candidate[d];
    if (value == sibling[d].second) continue;
    if (!feature.empty()) return {};
    if (key == kCheckpointingKey) feature = "activation checkpointing";
    else if (is_offload_key(key))
      feature = std::string(key == kOffloadOptimizerKey ? "optimizer" : "parameter") + " offload to " + value.get<std::string>();
    else return {};
  }
  return feature;
}

std::optional<std::size_t> blocking_sibling(const std::vector<std::size_t>& siblings, const std::vector<bool>& failed) {
  for (const std::size_t s : siblings)
    if (!failed[s]) return s;
  return std::nullopt;
}

}  // namespace shardscope::tune
