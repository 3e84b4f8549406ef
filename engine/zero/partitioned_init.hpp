#pragma once
// deepspeed.zero.Init's counterpart. While a PartitionedInit scope is active on this thread, a
// built-in model hands each of its layers over as soon as the layer is built: the layer's
// parameters are cut to this rank's chunk (exactly the chunk ZeRO stage 3's layout gives the rank)
// and released. So a model larger than one rank's memory is never whole on any rank; at most one
// layer is. The engine's stage-3 runtime then takes the chunks instead of cutting whole weights.
// Every rank must build the same model from the same seed (the values are not broadcast).

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/torch.h>

namespace shardscope::engine {

class PartitionedInit {
 public:
  /// Starts the scope on this thread; chunks go to `device` in `dtype` (the training precision).
  PartitionedInit(int rank, int world_size, torch::Dtype dtype, torch::Device device);
  ~PartitionedInit();
  PartitionedInit(const PartitionedInit&) = delete;
  PartitionedInit& operator=(const PartitionedInit&) = delete;

  /// The scope active on this thread, or null.
  static PartitionedInit* current();
  /// Keeps this rank's chunk of `layer`'s parameters (those not already partitioned, in
  /// parameters() order, padded to the world size) and releases the whole tensors.
  void partition_layer(torch::nn::Module& layer);
  /// The most parameter elements that were whole at once while the scope built the model.
  std::int64_t peak_whole_numel() const { return peak_whole_numel_; }
  std::int64_t partitioned_numel() const { return partitioned_numel_; }

 private:
  int rank_, world_size_;
  torch::Dtype dtype_;
  torch::Device device_;
  std::int64_t peak_whole_numel_ = 0, partitioned_numel_ = 0;
  PartitionedInit* previous_ = nullptr;
};

/// The true shape of a parameter a PartitionedInit released, or nullopt for any other tensor.
std::optional<std::vector<std::int64_t>> partitioned_shape(const torch::Tensor& param);

/// This rank's chunk of the group whose first parameter is `first_param`, removed from the
/// registry (and the group's other parameters with it); nullopt when it was not partitioned.
std::optional<torch::Tensor> take_partitioned_chunk(const torch::Tensor& first_param, int world_size);

}  // namespace shardscope::engine
