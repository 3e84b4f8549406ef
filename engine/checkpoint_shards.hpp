#pragma once
// Reading a ZeRO checkpoint tag written at any world size and stage: the model-states file(s), the
// optimizer shards of every rank and the partition layout stored in each, reassembled into one
// canonical fp32 buffer per state (the parameters in model order, no padding). This is what lets a
// run resume at another world size without DeepSpeed's universal-checkpoint conversion, and what
// `shardscope ckpt consolidate` and `ckpt info` read. Only rank 0's optimizer file is read when
// the tag is opened; the others are read one at a time when a buffer is reassembled, or not at all
// when a rank resumes with the saved partitioning and reads its own shard (rank_shard()).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

namespace shardscope::engine {

class PartitionLayout;

struct CheckpointTagInfo {
  std::string folder;        ///< dir/tag
  std::string tag;
  int zero_stage = 0;
  int world_size = 1;        ///< dp_world_size when it was saved
  bool bf16 = false;         ///< optimizer shards carry the bf16_ prefix
  std::string precision;     ///< dtype of the saved module weights ("fp32", "bf16", "fp16")
  std::string optimizer_type;
  std::int64_t optimizer_step = 0;
  std::int64_t global_steps = 0, global_samples = 0, skipped_steps = 0;
  std::string ds_version;
  std::vector<std::string> names;                  ///< parameters in model order
  std::vector<std::vector<std::int64_t>> shapes;   ///< their shapes
  std::vector<std::string> state_names;            ///< optimizer buffers ("exp_avg", ...)
  std::map<std::string, std::int64_t> file_bytes;  ///< every file of the tag and its size
  std::int64_t parameter_count() const;
};

class CheckpointShards {
 public:
  /// Opens dir/tag (tag empty: the one dir/latest names). Throws std::runtime_error naming the
  /// folder or file that is missing or not a ShardScope/DeepSpeed-layout checkpoint.
  CheckpointShards(const std::string& dir, const std::string& tag = "");
  ~CheckpointShards();

  const CheckpointTagInfo& info() const { return info_; }
  /// The model-states dict (rank 0's file at stage 3).
  const c10::impl::GenericDict& model_states() const;
  /// The optimizer dict of rank 0 (counters, loss scaler), or of the model states without ZeRO.
  const c10::impl::GenericDict& optimizer_dict() const;
  /// fp32 values of buffer `name` ("fp32" for the master weights, else an optimizer state) for all
  /// parameters in model order, reassembled from every rank's shard, reading one file at a time.
  /// CPU, [parameter_count()].
  torch::Tensor canonical(const std::string& name) const;
  /// The partitioning the optimizer shards were saved with (groups, padding, world size).
  const PartitionLayout& layout() const;
  /// Optimizer files in the tag: the world size for ZeRO stages 1-3, else 1.
  int partition_count() const;
  /// What saved rank `rank`'s optimizer file holds, as saved: "fp32" (its master shard) and each
  /// optimizer state, flat fp32 CPU tensors of layout().shard_numel() elements. Reads that file only.
  std::map<std::string, torch::Tensor> rank_shard(int rank) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CheckpointTagInfo info_;
};

/// The tags under a checkpoint dir (folders holding a model-states file), sorted, and the one
/// `latest` names ("" when there is no latest file).
std::vector<std::string> checkpoint_tags(const std::string& dir, std::string* latest = nullptr);

}  // namespace shardscope::engine
