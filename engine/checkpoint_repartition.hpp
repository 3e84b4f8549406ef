#pragma once
// Moving one fp32 buffer (the master weights, or an optimizer state) between two partitionings
// of the same parameters: the engine's (its layer groups and buckets, PartitionLayout) and
// DeepSpeed's (checkpoints/deepspeed_partitioning.hpp), in either direction. Each rank
// contributes the elements it holds and keeps the ones it needs; the data moves through
// all-reduces of fixed-size windows of the canonical order (every parameter end to end), so no
// rank ever holds more than one window beyond its own parts, and adding the other ranks' zeros
// to a value leaves it exact.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "checkpoints/deepspeed_partitioning.hpp"
#include "engine/zero/partition_layout.hpp"

namespace shardscope::engine {

class Communicator;

/// Elements this rank holds: `values[run.part ...]` are canonical elements `run.canonical ...`.
struct HeldPart {
  const float* values = nullptr;
  std::vector<checkpoints::PartitionRun> runs;
};

/// The runs of the engine shard of `rank` under `layout` (its chunk of every group).
std::vector<checkpoints::PartitionRun> engine_shard_runs(const PartitionLayout& layout, int rank);

/// A CPU fp32 tensor of `target_numel` elements holding, at each of `target_runs`, the canonical
/// elements the ranks' `held` parts supply (zero where none does). Collective over `comm` (null:
/// one rank); `device` is where the communicator's collectives run.
torch::Tensor repartition(const std::vector<HeldPart>& held, const std::vector<checkpoints::PartitionRun>& target_runs,
                          std::int64_t target_numel, std::int64_t canonical_numel, Communicator* comm,
                          const torch::Device& device);

/// Runs of a checkpoint (in its parameters' canonical order) moved to another canonical order:
/// `target_offset[i]` is where checkpoint parameter i starts there. Runs are split at parameter
/// boundaries.
std::vector<checkpoints::PartitionRun> remap_runs(const std::vector<checkpoints::PartitionRun>& runs,
                                                  const std::vector<checkpoints::ParameterEntry>& parameters,
                                                  const std::vector<std::int64_t>& target_offset);

}  // namespace shardscope::engine
