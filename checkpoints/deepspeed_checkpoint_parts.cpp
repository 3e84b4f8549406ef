// DeepSpeedCheckpoint::part: one saved rank's share of one buffer and where it belongs.
#include <algorithm>
#include <filesystem>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_checkpoint_impl.hpp"

namespace shardscope::checkpoints {
namespace {

void append(std::vector<float>& to, std::vector<float>&& from) {
  if (to.empty()) to = std::move(from);
  else to.insert(to.end(), from.begin(), from.end());
}

// The state entry `buffer` of one group's (or parameter's) optimizer state.
PickleRef state_entry(const PickleRef& state, std::int64_t index, const std::string& buffer) {
  const PickleRef group = state.is_dict() ? state[index] : state.at(static_cast<std::size_t>(index));
  const auto entry = group.get(buffer);
  if (!entry) group.fail("has no optimizer state '" + buffer + "'");
  return *entry;
}

std::int64_t size_of(const std::vector<float>& v) { return static_cast<std::int64_t>(v.size()); }

}  // namespace

RankPart DeepSpeedCheckpoint::Impl::part(int rank, const std::string& buffer, const CheckpointSummary& s) const {
  const int count = static_cast<int>(std::max<std::size_t>(1, optim_paths.size()));
  if (rank < 0 || rank >= count)
    throw std::out_of_range("DeepSpeedCheckpoint::part: rank " + std::to_string(rank) + " of " + std::to_string(count));
  const std::string& file_path = optim_paths.empty() ? states->path() : optim_paths[static_cast<std::size_t>(rank)];
  const std::string name = std::filesystem::path(file_path).filename().string();
  if (s.manifest && !verified.count(rank)) {  // the bytes about to be used are the ones saved
    if (const ManifestFile* f = s.manifest->find(name)) verify_crc(name, *f);
    verified.insert(rank);
  }
  RankPart out;
  const std::int64_t total = s.parameter_count();
  const auto whole = [&](const std::vector<float>& values, const PickleRef& where) {
    if (size_of(values) != total)
      where.fail("holds " + std::to_string(values.size()) + " elements for " + std::to_string(total) + " parameters");
    return std::vector<PartitionRun>{{0, 0, total}};
  };
  switch (s.layout) {
    case OptimizerLayout::kTorchPerParameter: {
      const PickleRef root = states->root();
      const PickleRef o = root["optimizer"];
      std::vector<std::int64_t> indices;
      for (const auto& group : o["param_groups"].items())
        for (const auto& i : group["params"].items()) indices.push_back(i.as_int());
      if (indices.size() != s.parameters.size())
        o["param_groups"].fail("lists " + std::to_string(indices.size()) + " parameters, the module " +
                               std::to_string(s.parameters.size()));
      for (std::size_t i = 0; i < s.parameters.size(); ++i) {
        const PickleRef t = buffer == "fp32" ? root["module"][module_keys[i]] : state_entry(o["state"], indices[i], buffer);
        append(out.values, states->read_float32(t.as_tensor()));
      }
      out.runs = whole(out.values, o);
      return out;
    }
    case OptimizerLayout::kFusedFlat: {
      const PickleRef o = states->root()["optimizer"];
      const PickleRef flat = o["fp32_groups_flat"];
      for (std::size_t g = 0; g < flat.length(); ++g) {
        const PickleRef t = buffer == "fp32" ? flat.at(g) : state_entry(o["optimizer_state_dict"]["state"], static_cast<std::int64_t>(g), buffer);
        append(out.values, states->read_float32(t.as_tensor()));
      }
      out.runs = whole(out.values, flat);
      return out;
    }
    case OptimizerLayout::kZero12:
    case OptimizerLayout::kZero3: break;
  }
  std::unique_ptr<TorchFile> opened;
  const TorchFile* file = optimizer0.get();
  if (rank != 0) {
    opened = std::make_unique<TorchFile>(file_path);
    file = opened.get();
  }
  const PickleRef o = file->root()["optimizer_state_dict"];
  const PickleRef state = state_of(o, s);
  if (s.layout == OptimizerLayout::kZero3) {
    const PickleRef flat = o["fp32_flat_groups"];
    for (std::size_t g = 0; g < flat.length(); ++g) {
      const PickleRef t = buffer == "fp32" ? flat.at(g) : state_entry(state, static_cast<std::int64_t>(g), buffer);
      append(out.values, file->read_float32(t.as_tensor()));
    }
    std::int64_t expected = 0;
    for (const auto& p : s.parameters) expected += zero3_partition_numel(p.numel, s.world_size);
    if (size_of(out.values) != expected)
      flat.fail("holds " + std::to_string(out.values.size()) + " elements of '" + buffer + "', where ZeRO 3 at " +
                std::to_string(s.world_size) + " ranks gives each rank " + std::to_string(expected));
    out.runs = zero3_runs(s.parameters, s.world_size, rank);
    return out;
  }
  const PickleRef fp32 = o["single_partition_of_fp32_groups"];
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const PickleRef t = buffer == "fp32" ? fp32.at(g) : state_entry(state, static_cast<std::int64_t>(g), buffer);
    std::vector<float> values = file->read_float32(t.as_tensor());
    const std::int64_t flat = groups[g].flat_numel(s.parameters);
    const std::int64_t partition = zero12_partition_numel(flat, s.world_size);
    if (size_of(values) > partition)
      t.fail("holds " + std::to_string(values.size()) + " elements, more than the " + std::to_string(partition) +
             " of a rank's partition of group " + std::to_string(g));
    const std::int64_t lean = partition - zero12_group_padding(flat, s.world_size, rank);
    if (buffer == "fp32" && size_of(values) < std::max<std::int64_t>(0, lean))
      t.fail("holds " + std::to_string(values.size()) + " elements, fewer than this rank's partition of group " + std::to_string(g));
    const auto runs = zero12_runs(s.parameters, groups[g], s.world_size, rank, size_of(out.values), size_of(values));
    out.runs.insert(out.runs.end(), runs.begin(), runs.end());
    append(out.values, std::move(values));
  }
  return out;
}

}  // namespace shardscope::checkpoints
