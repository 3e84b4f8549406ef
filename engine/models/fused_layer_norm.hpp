#pragma once
// The built-in models' LayerNorm: torch::nn::LayerNorm's parameters and maths, computed on a GPU by
// the fused kernels of kernels/cuda_layer_norm.hpp (the forward reads the activations once, the
// backward reads dy and x once for dx, d weight and d bias, where torch's CUDA LayerNorm reads them
// three times), and by torch's own layer_norm elsewhere: on the CPU, under autocast, for mixed
// dtypes, and for a shape or layout the kernels do not take.

#include <torch/nn/modules/normalization.h>

namespace shardscope::engine {

/// module->forward(x), fused where it can be (see the file comment).
torch::Tensor layer_norm(const torch::Tensor& x, const torch::nn::LayerNorm& module);

}  // namespace shardscope::engine
