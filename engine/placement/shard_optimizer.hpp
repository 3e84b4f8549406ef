#pragma once
// The optimizer of this rank's shard, wherever its state lives (DeepSpeed's ZeRO optimizer with
// its offload and swapper parts): built from the placement plan as one store per tier (the
// device, pinned host memory, NVMe) over consecutive ranges of the shard, each stepped where its
// state is and each writing its updated weights into the runtime's shard. The engine's step,
// checkpoints and GatheredParameters go through it and never ask where the state is.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "engine/flat_optimizer.hpp"
#include "engine/placement/optimizer_store.hpp"
#include "engine/placement/placement_plan.hpp"

namespace shardscope::engine {

class ZeroRuntime;

/// This rank's fp32 master and optimizer state in host memory: what a checkpoint saves and loads.
struct HostOptimizerState {
  torch::Tensor master;                        ///< fp32, the shard's length
  std::map<std::string, torch::Tensor> state;  ///< each state buffer, the shard's length
  std::int64_t step_count = 0;
};

struct ShardOptimizerOptions {
  torch::Device device = torch::kCPU;
  torch::Dtype model_dtype = torch::kFloat32;
  int rank = 0;
  /// Lamb's whole tensors in shard offsets (empty: one segment per store).
  std::vector<TensorSegment> segments;
  /// The aio settings with the backend chosen and the owner ("rank R") set (NVMe tiers only).
  aio::AioSettings aio;
};

class ShardOptimizer {
 public:
  /// The stores `plan` asks for over `runtime`'s shard, their masters initialized from its weights.
  /// With no offload at stages 1-3 the device master becomes the runtime's gather source.
  ShardOptimizer(const PlacementPlan& plan, const OptimizerSettings& settings, ZeroRuntime& runtime,
                 const ShardOptimizerOptions& options);
  ~ShardOptimizer();

  const OptimizerSettings& settings() const { return settings_; }
  std::int64_t step_count() const { return step_count_; }
  /// One step of every store from `grads` (the runtime's pieces); each store's updated weights go
  /// into the runtime's shard. Host pieces come unscaled and clipped; the device store's kernels
  /// multiply its device pieces by `device_grad_scale` as they read them (unscale x clip, no pass
  /// of their own).
  void step(const GradientPieces& grads, double lr, std::optional<double> beta1 = std::nullopt,
            std::optional<double> beta2 = std::nullopt, float device_grad_scale = 1.0f);
  /// Whether the last step's kernel wrote the 16-bit weights the model uses (stage 0, and stages
  /// 1-3 on one rank without offload): then no gather or cast has to follow it.
  bool writes_model_weights() const { return writes_model_weights_; }
  /// Whether the step reads gradients from host memory (the device must be synchronized first).
  bool reads_host_gradients() const { return host_grads_.defined(); }

  /// Bytes of optimizer state (moments, sums), wherever it lives: 1/N of the whole at ZeRO >= 1.
  std::int64_t state_bytes() const;
  /// Bytes of master, state, buffers and host gradients held in device or host memory.
  std::int64_t memory_bytes() const;
  /// Adds the tensors behind memory_bytes() to `out` (the engine's memory sample dedupes views).
  void collect_memory(std::vector<torch::Tensor>& out) const;
  /// The fp32 master when one resident store holds all of it (the device, or host memory for CPU
  /// offload); undefined with NVMe or partial offload.
  torch::Tensor master() const;
  /// That store's optimizer (its state tensors); null when there is no single resident store.
  const FlatOptimizer* resident() const;

  /// This rank's master and state copied into host memory (read back from NVMe where swapped;
  /// not const: that takes the swap buffers).
  HostOptimizerState materialize();
  /// Puts saved state back where the plan places it, and the shard's weights from the master.
  void place(const HostOptimizerState& state);
  /// The master follows the shard's weights after they changed outside the optimizer.
  void refresh_master_from_weights();

  /// One line per store: what is where.
  std::vector<std::string> describe() const;

 private:
  void add_device_store(const PlacementPlan& plan, ShardRange range);
  void add_offload_store(const PlacementPlan& plan, ShardRange range, int first_group);
  std::vector<TensorSegment> segments_in(ShardRange range) const;

  OptimizerSettings settings_;
  ZeroRuntime& runtime_;
  ShardOptimizerOptions options_;
  torch::Tensor host_grads_;  ///< the offloaded range's reduced gradients (fp32, pinned on a GPU)
  std::vector<std::unique_ptr<OptimizerStore>> stores_;
  std::int64_t step_count_ = 0;
  bool writes_model_weights_ = false;  ///< the device store's kernel writes ZeroRuntime::kernel_weight_copy()
};

}  // namespace shardscope::engine
