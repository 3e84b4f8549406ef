#pragma once
// Flat buffers: every trainable parameter of a module lives in one contiguous buffer of one dtype,
// each parameter a view into it (swapped in with set_data, so autograd and the module keep their
// references), and each parameter's .grad a view into a flat gradient buffer of the same layout.
// Autograd accumulates into an existing .grad in place, so backward writes straight into the flat
// gradient buffer and the optimizer, reductions and checkpoints see whole buffers.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace shardscope::engine {

class PartitionLayout;

struct ParameterSlot {
  std::string name;      ///< the module's name for it (Hugging Face names for the built-in models)
  torch::Tensor param;   ///< the parameter itself (a view into the flat buffer)
  std::int64_t offset = 0;
  std::int64_t numel = 0;
  std::vector<std::int64_t> shape;
};

/// Gradients of the flat elements [offset, offset + grads.numel()): the optimizer's and the
/// clipping's view of gradients that ZeRO stages 2-3 hold as separate per-group chunks.
struct GradientPiece {
  std::int64_t offset = 0;
  torch::Tensor grads;
};
using GradientPieces = std::vector<GradientPiece>;

class FlatParameters {
 public:
  /// Places `slots` (from collect_slots) where `layout` puts them, converted to `dtype` on
  /// `device`; with `with_grads`, each .grad becomes a view into a flat gradient buffer too.
  FlatParameters(std::vector<ParameterSlot> slots, const PartitionLayout& layout, torch::Dtype dtype,
                 torch::Device device, bool with_grads);

  /// The trainable parameters of `module` in registration order, a tied one once (offsets unset).
  static std::vector<ParameterSlot> collect_slots(torch::nn::Module& module);

  const torch::Tensor& params() const { return params_; }
  const torch::Tensor& grads() const { return grads_; }
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  /// Elements that belong to parameters (the buffer may be longer by the padding).
  std::int64_t numel() const { return numel_; }
  std::int64_t padded_numel() const { return params_.numel(); }

  /// Zeroes the gradient buffer (the .grad views stay bound to it); no-op without one.
  void zero_grads();
  /// Slot `slot`'s view into the gradient buffer, in the parameter's shape.
  torch::Tensor grad_view(std::size_t slot) const;
  /// Re-points every parameter's .grad at the flat buffer, in case user code replaced one.
  void bind_grads();

 private:
  std::vector<ParameterSlot> slots_;
  torch::Tensor params_;
  torch::Tensor grads_;
  std::int64_t numel_ = 0;
};

}  // namespace shardscope::engine
