#pragma once
// DeepSpeed 0.19.7's checkpoint layout: file names (runtime/engine.py, checkpoint/constants.py)
// and how ZeRO splits the fp32 master and the optimizer state of each parameter into the ranks'
// optimizer files. Both ShardScope's reader and its writer use this, so a checkpoint either
// program wrote reads the same. The engine's own in-memory partitioning (layer groups at stage
// 3, buckets at stages 1-2) is converted to this one at save and back at load.
//
//  ZeRO 1-2 (stage_1_and_2.py): per parameter group, the parameters end to end (each followed by
//    its parameter_alignment padding, 0 by default), padded at the end to a multiple of
//    2 x world size (nccl_start_alignment_factor 2), cut into world-size equal partitions P;
//    rank r holds flat elements [rP, (r+1)P). The fp32 master is saved without the padding
//    (only the last rank's partition is shorter); optimizer states keep it.
//  ZeRO 3 (stage3.py, partition_parameters.py): every parameter on its own: ceil(numel / world)
//    elements per rank, padded in the last rank; rank r's flat buffer is its chunk of each
//    parameter end to end, split into sub-groups of about sub_group_size elements.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::checkpoints {

/// "mp_rank_00_model_states.pt", or "zero_pp_rank_<dp>_mp_rank_00_model_states.pt" at stage 3.
std::string model_states_file_name(int zero_stage, int dp_rank);
/// "zero_pp_rank_<dp>_mp_rank_00_optim_states.pt", prefixed "bf16_" in bf16 training.
std::string optim_states_file_name(bool bf16, int dp_rank);
/// DeepSpeed's default tag: "global_step<N>".
std::string default_checkpoint_tag(std::int64_t global_steps);
/// The manifest ShardScope writes last into each tag folder (checkpoint_manifest.hpp).
inline constexpr const char* kManifestFileName = "shardscope_manifest.json";

/// A per-rank checkpoint file recognised by its name.
struct CheckpointFileName {
  enum class Kind { kModelStates, kZeroModelStates, kOptimStates } kind = Kind::kModelStates;
  int dp_rank = 0;
  bool bf16 = false;
};
/// Parses "[bf16_]zero_pp_rank_<r>_mp_rank_00_optim_states.pt" and the model-states names.
std::optional<CheckpointFileName> parse_checkpoint_file_name(const std::string& name);

/// A parameter in the checkpoint's order; `offset` is where it starts in the canonical buffer
/// (every parameter end to end, no padding).
struct ParameterEntry {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t numel = 0;
  std::int64_t offset = 0;
};

/// `count` elements from `part` of a rank's flat buffer are canonical elements from `canonical`.
struct PartitionRun {
  std::int64_t canonical = 0;
  std::int64_t part = 0;
  std::int64_t count = 0;
};

/// One ZeRO 1-2 parameter group: parameter indices in order, each one's alignment padding.
struct Zero12Group {
  std::vector<int> params;
  std::vector<std::int64_t> alignment_paddings;  ///< empty: none
  /// Elements of the group's flat buffer before the end padding (parameters plus alignment).
  std::int64_t flat_numel(const std::vector<ParameterEntry>& parameters) const;
};

/// ZeRO 1-2: elements per rank of a group of `flat_numel` elements at `world_size`.
std::int64_t zero12_partition_numel(std::int64_t flat_numel, int world_size);
/// ZeRO 1-2: the padding DeepSpeed strips from rank `rank`'s fp32 partition (group_paddings).
std::int64_t zero12_group_padding(std::int64_t flat_numel, int world_size, int rank);
/// ZeRO 1-2: where the first `length` elements of rank `rank`'s partition of `group` go, its
/// data starting at `part_base` in the rank's buffer (groups end to end).
std::vector<PartitionRun> zero12_runs(const std::vector<ParameterEntry>& parameters, const Zero12Group& group,
                                      int world_size, int rank, std::int64_t part_base, std::int64_t length);

/// ZeRO 3: elements of one parameter's partition, ceil(numel / world_size).
std::int64_t zero3_partition_numel(std::int64_t numel, int world_size);
/// ZeRO 3: where rank `rank`'s flat buffer (every parameter's chunk end to end) goes.
std::vector<PartitionRun> zero3_runs(const std::vector<ParameterEntry>& parameters, int world_size, int rank);
/// ZeRO 3: the sub-groups DeepSpeed's _create_fp16_sub_groups forms (parameter index ranges
/// [begin, end)): a group closes once its partitions reach `sub_group_size` elements.
std::vector<std::pair<int, int>> zero3_sub_groups(const std::vector<ParameterEntry>& parameters, int world_size,
                                                  std::int64_t sub_group_size);

/// Fills `offset` of each entry (canonical order) and returns the total number of elements;
/// throws CheckpointError naming `file` when a shape is negative or the sizes overflow.
std::int64_t assign_offsets(std::vector<ParameterEntry>& parameters, const std::string& file);

}  // namespace shardscope::checkpoints
