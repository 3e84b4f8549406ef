#include "engine/zero/partition_layout.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace shardscope::engine {

PartitionLayout::PartitionLayout(std::vector<std::int64_t> slot_numels, std::vector<LayoutGroup> groups,
                                 int world_size)
    : slot_numels_(std::move(slot_numels)), groups_(std::move(groups)), world_size_(world_size) {
  if (world_size_ < 1) throw std::invalid_argument("partition layout: world size must be at least 1");
  const std::size_t n = slot_numels_.size();
  slot_offsets_.assign(n, -1);
  slot_groups_.assign(n, -1);
  canonical_offsets_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    canonical_offsets_[i] = numel_;
    numel_ += slot_numels_[i];
  }
  std::int64_t flat = 0, shard = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    LayoutGroup& group = groups_[g];
    group.numel = 0;
    group.flat_offset = flat;
    for (int slot : group.slots) {
      if (slot < 0 || static_cast<std::size_t>(slot) >= n || slot_groups_[static_cast<std::size_t>(slot)] >= 0)
        throw std::invalid_argument("partition layout: parameter " + std::to_string(slot) +
                                    " is out of range or in two groups");
      slot_groups_[static_cast<std::size_t>(slot)] = static_cast<int>(g);
      slot_offsets_[static_cast<std::size_t>(slot)] = flat + group.numel;
      group.numel += slot_numels_[static_cast<std::size_t>(slot)];
    }
    group.padded_numel = (group.numel + world_size_ - 1) / world_size_ * world_size_;
    if (group.padded_numel == 0) group.padded_numel = world_size_;  // keeps every chunk non-empty
    group.shard_offset = shard;
    flat += group.padded_numel;
    shard += group.padded_numel / world_size_;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (slot_groups_[i] < 0)
      throw std::invalid_argument("partition layout: parameter " + std::to_string(i) + " is in no group");
  padded_numel_ = flat;
}

PartitionLayout PartitionLayout::buckets(const std::vector<std::int64_t>& slot_numels, std::int64_t bucket_elements,
                                         int world_size) {
  std::vector<LayoutGroup> groups;
  for (std::size_t i = 0; i < slot_numels.size(); ++i) {
    if (groups.empty() || (groups.back().numel > 0 && groups.back().numel + slot_numels[i] > bucket_elements)) {
      groups.emplace_back();
      groups.back().name = "bucket " + std::to_string(groups.size() - 1);
    }
    groups.back().slots.push_back(static_cast<int>(i));
    groups.back().numel += slot_numels[i];
  }
  return PartitionLayout(slot_numels, std::move(groups), world_size);
}

std::string PartitionLayout::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : groups_)
    groups.push_back({{"name", g.name}, {"slots", g.slots}, {"persistent", g.persistent}});
  return nlohmann::json{{"world_size", world_size_}, {"slot_numels", slot_numels_}, {"groups", groups}}.dump();
}

PartitionLayout PartitionLayout::from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("world_size") || !j.contains("slot_numels") || !j.contains("groups"))
    throw std::invalid_argument("partition layout: not a layout written by ShardScope (need world_size, "
                                "slot_numels, groups)");
  std::vector<LayoutGroup> groups;
  for (const auto& g : j.at("groups")) {
    LayoutGroup group;
    group.name = g.value("name", "");
    group.slots = g.at("slots").get<std::vector<int>>();
    group.persistent = g.value("persistent", false);
    groups.push_back(std::move(group));
  }
  return PartitionLayout(j.at("slot_numels").get<std::vector<std::int64_t>>(), std::move(groups),
                         j.at("world_size").get<int>());
}

}  // namespace shardscope::engine
