#pragma once
// One tag of a checkpoint in DeepSpeed 0.19.7's layout, written by DeepSpeed or by ShardScope:
// what it holds (stage, world size, parameters, optimizer, counters) and, for each saved rank,
// its part of the fp32 master and of every optimizer state with where that part goes among all
// parameters. No LibTorch: `shardscope ckpt` and the engine's load both read tags through this.
//
// Opening a tag checks that it is one consistent set before anything is used: with ShardScope's
// manifest (checkpoint_manifest.hpp), every rank's file must be the one the manifest lists (size,
// and the per-save id inside it; with verify_content also its CRC-32), and no other rank file
// may sit in the folder. Without one (DeepSpeed wrote it), every rank's file must exist, parse,
// and agree with rank 0's on the world size, the ZeRO stage and the optimizer step. The first
// file that does not belong is named.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoints/checkpoint_manifest.hpp"
#include "checkpoints/deepspeed_partitioning.hpp"
#include "checkpoints/torch_file.hpp"

namespace shardscope::checkpoints {

/// How a tag stores its optimizer.
enum class OptimizerLayout {
  kTorchPerParameter,  ///< stage 0, fp32: torch's optimizer state_dict inside the model states
  kFusedFlat,          ///< stage 0, fp16/bf16: FP16_Optimizer's flat fp32 groups inside the model states
  kZero12,             ///< ZeRO 1-2 (and BF16_Optimizer): single_partition_of_fp32_groups per rank
  kZero3,              ///< ZeRO 3: fp32_flat_groups per rank
};

/// The loss scaler's state, from DeepSpeed's LossScaler/DynamicLossScaler or ShardScope's dict.
struct LossScalerSnapshot {
  double cur_scale = 1.0;
  bool dynamic = false;
  std::int64_t cur_iter = 0;
  std::int64_t last_overflow_iter = -1;
  std::int64_t cur_hysteresis = 2;
};

struct CheckpointSummary {
  std::string folder, tag;
  int zero_stage = 0;
  int world_size = 1;          ///< dp_world_size when it was saved
  bool bf16_files = false;     ///< the optimizer files carry the bf16_ prefix
  std::string precision;       ///< "fp32", "bf16" or "fp16"
  std::string optimizer_type;  ///< from ds_config (or ShardScope's record); "" when unknown
  std::int64_t optimizer_step = 0;
  std::vector<std::string> state_names;  ///< optimizer buffers ("exp_avg", ...)
  std::int64_t global_steps = 0, global_samples = 0, skipped_steps = 0;
  std::string ds_version;    ///< the DeepSpeed layout version ("0.19.7")
  std::string written_by;    ///< "DeepSpeed 0.19.7" or "ShardScope 0.1.0"
  std::vector<ParameterEntry> parameters;                    ///< checkpoint order
  std::vector<std::pair<std::string, std::string>> shared;  ///< tied: (name not stored, name holding it)
  std::vector<std::string> buffer_names;
  OptimizerLayout layout = OptimizerLayout::kZero12;
  std::optional<Manifest> manifest;
  std::map<std::string, std::uint64_t> file_bytes;  ///< every file of the tag folder and its size
  std::int64_t parameter_count() const;
};

/// A saved rank's part of one buffer, as fp32, and the runs that place it in the canonical order.
struct RankPart {
  std::vector<float> values;
  std::vector<PartitionRun> runs;
};

struct OpenOptions {
  /// Check every file's CRC-32 against the manifest (reads every byte; `ckpt info`, `consolidate`).
  bool verify_content = false;
};

class DeepSpeedCheckpoint {
 public:
  /// Opens the tag folder `folder` (dir/tag). Throws CheckpointError naming the file or entry
  /// that is missing, damaged, or not part of this save.
  explicit DeepSpeedCheckpoint(const std::string& folder, const OpenOptions& options = {});
  ~DeepSpeedCheckpoint();

  const CheckpointSummary& summary() const { return summary_; }
  /// Files holding optimizer partitions: the world size under ZeRO, 1 otherwise.
  int part_count() const;
  /// Saved rank `rank`'s part of buffer `buffer` ("fp32" for the master weights, or a state
  /// name). Reads that rank's file only (its CRC-32 is checked first when there is a manifest).
  RankPart part(int rank, const std::string& buffer) const;
  /// The whole buffer in the canonical order (every parameter end to end), reading the ranks'
  /// files one at a time.
  std::vector<float> canonical(const std::string& buffer) const;
  /// The fp32 learning-rate scheduler position (lr_scheduler.last_batch_iteration), if saved.
  std::optional<std::int64_t> lr_last_batch_iteration() const;
  /// The loss scaler, if the checkpoint has one that scales (fp16); nullopt otherwise.
  std::optional<LossScalerSnapshot> loss_scaler() const;
  /// ShardScope's client state (JSON text), "" for a checkpoint DeepSpeed wrote.
  std::string client_state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CheckpointSummary summary_;
};

}  // namespace shardscope::checkpoints
