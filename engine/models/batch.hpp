#pragma once
// One micro-batch as the data loaders produce it and the built-in models consume it.

#include <torch/types.h>

namespace shardscope::engine {

/// Language models: `inputs` are token ids [B, T] and `targets` the next tokens [B, T], both
/// int64 (a target of -100 is ignored, as in Hugging Face). The MLP: `inputs` are x [B, in] and
/// `targets` are y [B, out], both float.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;

  /// Samples in the batch (its first dimension).
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
  /// Tokens for language-model batches (B x T), samples for 2-D float batches.
  std::int64_t num_tokens() const {
    return inputs.defined() && inputs.dim() == 2 && !inputs.is_floating_point() ? inputs.numel() : size();
  }
  /// The same batch on another device (non-blocking when the source is pinned).
  Batch to(const torch::Device& device) const {
    return {inputs.to(device, /*non_blocking=*/true), targets.to(device, /*non_blocking=*/true)};
  }
};

}  // namespace shardscope::engine
