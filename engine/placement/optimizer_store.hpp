#pragma once
// The fp32 master and optimizer state of one range of this rank's shard, on one tier: resident
// (device or host memory, stepped where it lives) or swapped to NVMe (stepped on the CPU one
// sub-group at a time through pinned buffers). ShardOptimizer holds one store per tier the
// placement plan uses; the step, checkpoints and GatheredParameters go through this interface.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "engine/flat_optimizer.hpp"
#include "engine/placement/param_shard.hpp"

namespace shardscope::engine {

class OptimizerStore {
 public:
  explicit OptimizerStore(ShardRange range) : range_(range) {}
  virtual ~OptimizerStore() = default;
  /// The elements of the shard this store holds.
  ShardRange range() const { return range_; }
  virtual Tier tier() const = 0;
  /// One step of the range from `grads` (pieces inside it, shard offsets, unscaled and clipped),
  /// then the updated weights into `shard` (unless the kernel wrote them there already).
  virtual void step(const GradientPieces& grads, const StepArgs& args, ParamShard& shard) = 0;
  /// Copies the range's fp32 master and each state into host tensors of the whole shard's length
  /// (not const: reading swapped state back takes the store's buffers).
  virtual void save_into(torch::Tensor& master, std::map<std::string, torch::Tensor>& state) = 0;
  /// The reverse (checkpoint load), then the shard's weights from the loaded master.
  virtual void load_from(const torch::Tensor& master, const std::map<std::string, torch::Tensor>& state,
                         ParamShard& shard) = 0;
  /// The master follows the shard's weights after they changed outside the optimizer.
  virtual void refresh_master(ParamShard& shard) = 0;
  /// Adds the tensors holding master, state and buffers in device or host memory to `out`.
  virtual void collect_memory(std::vector<torch::Tensor>& out) const = 0;
  /// Bytes of those tensors, each storage once.
  std::int64_t memory_bytes() const;
  /// Bytes of optimizer state (moments, sums), wherever it is.
  virtual std::int64_t state_bytes() const = 0;
  /// The start line: what is where.
  virtual std::string describe() const = 0;
  /// The resident optimizer (tests and the memory report); null on NVMe.
  virtual const FlatOptimizer* resident() const { return nullptr; }

 protected:
  ShardRange range_;
};

/// A store whose master and state live in memory on `master`'s device (the device, or host memory
/// for CPU offload). `master` holds the range's initial fp32 weights (it may be the shard itself,
/// at stages 1-3 without offload, or the model's fp32 buffer at stage 0). `model_copy` is where
/// the kernel writes the updated 16-bit weights in the same pass (undefined: none).
std::unique_ptr<OptimizerStore> make_resident_optimizer_store(const OptimizerSettings& settings, ShardRange range,
                                                              Tier tier, torch::Tensor master, torch::Tensor model_copy,
                                                              std::vector<TensorSegment> segments);

/// One sub-group of an NVMe store: consecutive groups of at most sub_group_size elements.
struct SubGroupSpec {
  ShardRange range;
  int first_slot = 0, last_slot = 0;  ///< parameter indices, for DeepSpeed-style file names
  std::vector<TensorSegment> segments;  ///< Lamb's tensors, offsets within the sub-group
};

struct NvmeOptimizerOptions {
  OptimizerSwapPlan swap;
  aio::AioSettings aio;              ///< backend and owner filled in
  int rank = 0;
  bool pinned = false;
  torch::Dtype model_dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;  ///< the training device (where the shard's gathers run)
};

/// offload_optimizer "nvme": the range's sub-groups swapped to files under DeepSpeed's
/// <nvme_path>/zero_stage_3/optimizer/rank<R> (sub-groups below max(1 MiB, aio.block_size) stay
/// in host memory), initialized from `shard`. Throws IoError for an unusable path or a disk too
/// small, std::invalid_argument naming offload_optimizer.buffer_count when the buffers cannot
/// hold what the pipelining asks for.
std::unique_ptr<OptimizerStore> make_nvme_optimizer_store(const OptimizerSettings& settings, ShardRange range,
                                                          std::vector<SubGroupSpec> sub_groups,
                                                          const NvmeOptimizerOptions& options, ParamShard& shard);

}  // namespace shardscope::engine
