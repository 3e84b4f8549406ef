#pragma once
// How ZeRO lays parameters out and splits them across data-parallel ranks. Parameters are grouped
// (reduce buckets at stages 0-2, layers at stage 3); each group is one contiguous range of the
// flat buffer, padded to a multiple of the world size, and rank r owns chunk r of every group.
// Reduce-scatter and all-gather then move whole groups, and this rank's shard (the optimizer's
// fp32 master and states) is its chunks of all groups, end to end. Torch-free: the checkpoint
// tools use the same arithmetic to reassemble shards written at any world size.

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::engine {

/// One group of parameters moved by one collective.
struct LayoutGroup {
  std::string name;                ///< "bucket 3" or the layer's name ("transformer.h.2")
  std::vector<int> slots;          ///< parameter indices, in buffer order
  std::int64_t numel = 0;          ///< elements of its parameters
  std::int64_t padded_numel = 0;   ///< numel rounded up to a multiple of the world size
  std::int64_t flat_offset = 0;    ///< start in the padded flat buffer
  std::int64_t shard_offset = 0;   ///< start of this group's chunk in every rank's shard
  bool persistent = false;         ///< stage 3: stays gathered (small, under the persistence threshold)
  std::int64_t chunk(int world_size) const { return padded_numel / world_size; }
};

class PartitionLayout {
 public:
  /// `slot_numels[i]` is parameter i's element count; `groups` lists the parameter indices of each
  /// group (every parameter exactly once). Throws std::invalid_argument when they do not.
  PartitionLayout(std::vector<std::int64_t> slot_numels, std::vector<LayoutGroup> groups, int world_size);

  /// Groups of consecutive parameters of about `bucket_elements` each (never splitting one).
  static PartitionLayout buckets(const std::vector<std::int64_t>& slot_numels, std::int64_t bucket_elements,
                                 int world_size);

  int world_size() const { return world_size_; }
  const std::vector<LayoutGroup>& groups() const { return groups_; }
  std::vector<LayoutGroup>& mutable_groups() { return groups_; }
  std::size_t slot_count() const { return slot_numels_.size(); }
  std::int64_t slot_numel(int slot) const { return slot_numels_[static_cast<std::size_t>(slot)]; }
  /// Where parameter `slot` starts in the padded flat buffer.
  std::int64_t slot_offset(int slot) const { return slot_offsets_[static_cast<std::size_t>(slot)]; }
  /// The group holding parameter `slot`.
  int group_of(int slot) const { return slot_groups_[static_cast<std::size_t>(slot)]; }
  /// Elements of all parameters, and of the padded flat buffer.
  std::int64_t numel() const { return numel_; }
  std::int64_t padded_numel() const { return padded_numel_; }
  /// Elements of one rank's shard (the same on every rank).
  std::int64_t shard_numel() const { return padded_numel_ / world_size_; }

  /// Copies rank `rank`'s shard out of `canonical` (all parameters in slot order, unpadded) into
  /// `shard` (shard_numel() values, padding zeroed): how a checkpoint is resharded.
  template <typename T>
  void shard_from_canonical(const T* canonical, int rank, T* shard) const;
  /// The inverse: writes the parts of `canonical` that rank `rank`'s `shard` holds.
  template <typename T>
  void canonical_from_shard(const T* shard, int rank, T* canonical) const;

  /// JSON text of the layout (slot numels, groups, world size), stored with every shard.
  std::string to_json() const;
  /// Parses to_json()'s text; throws std::invalid_argument naming what is wrong.
  static PartitionLayout from_json(const std::string& text);

  /// Calls fn(canonical_offset, shard_offset, count) for each run of `rank`'s shard that holds
  /// parameter values (how checkpoints convert to and from DeepSpeed's partitioning).
  template <typename Fn>
  void for_each_owned_run(int rank, Fn&& fn) const;

 private:
  std::vector<std::int64_t> slot_numels_, slot_offsets_, canonical_offsets_;
  std::vector<int> slot_groups_;
  std::vector<LayoutGroup> groups_;
  int world_size_ = 1;
  std::int64_t numel_ = 0, padded_numel_ = 0;
};

template <typename Fn>
void PartitionLayout::for_each_owned_run(int rank, Fn&& fn) const {
  for (const auto& g : groups_) {
    const std::int64_t chunk = g.chunk(world_size_);
    const std::int64_t begin = g.flat_offset + chunk * rank, end = begin + chunk;  // padded-flat range
    for (int slot : g.slots) {
      const std::int64_t p_begin = slot_offsets_[static_cast<std::size_t>(slot)];
      const std::int64_t p_end = p_begin + slot_numels_[static_cast<std::size_t>(slot)];
      const std::int64_t lo = p_begin > begin ? p_begin : begin, hi = p_end < end ? p_end : end;
      if (lo >= hi) continue;
      fn(canonical_offsets_[static_cast<std::size_t>(slot)] + (lo - p_begin), g.shard_offset + (lo - begin), hi - lo);
    }
  }
}

template <typename T>
void PartitionLayout::shard_from_canonical(const T* canonical, int rank, T* shard) const {
  for (std::int64_t i = 0; i < shard_numel(); ++i) shard[i] = T(0);
  for_each_owned_run(rank, [&](std::int64_t c, std::int64_t s, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) shard[s + i] = canonical[c + i];
  });
}

template <typename T>
void PartitionLayout::canonical_from_shard(const T* shard, int rank, T* canonical) const {
  for_each_owned_run(rank, [&](std::int64_t c, std::int64_t s, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) canonical[c + i] = shard[s + i];
  });
}

}  // namespace shardscope::engine
