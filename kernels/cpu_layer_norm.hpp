#pragma once
// LayerNorm over the last dimension (torch.nn.functional.layer_norm with weight and bias) as two
// fused passes: the forward reads each row once (mean and variance in fp32, two passes over the
// row in cache) and writes y and the row's mean and 1/std; the backward reads dy and x once and
// writes dx, and per block of rows the partial sums of d weight = sum(dy * x_hat) and
// d bias = sum(dy), which a second, small pass adds up. torch's CUDA LayerNorm reads the
// activations three times in backward (grad input, then gamma/beta). This header has the shared
// description and the plain CPU reference the CUDA kernels (cuda_layer_norm.hpp) are tested against.

#include <cstdint>

#include "kernels/dtype.hpp"

namespace shardscope::kernels {

/// `rows` contiguous rows of `width` elements of one dtype; weight and bias have `width`
/// elements of the same dtype.
struct LayerNormShape {
  std::int64_t rows = 0;
  std::int64_t width = 0;
  Dtype dtype = Dtype::kBFloat16;
  float eps = 1e-5f;
};

struct LayerNormForward {
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  float* mean = nullptr;  ///< [rows]
  float* rstd = nullptr;  ///< [rows], 1 / sqrt(var + eps) with the biased variance
};

struct LayerNormBackward {
  const void* dy = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  void* dx = nullptr;
  void* dweight = nullptr;  ///< [width], written (not accumulated)
  void* dbias = nullptr;    ///< [width], written (not accumulated)
};

/// Throws KernelError naming `kernel` for a shape the kernels do not take.
void check_layer_norm_shape(const LayerNormShape& shape, const char* kernel);

/// The reference forward, in double.
void cpu_layer_norm_forward(const LayerNormShape& shape, const LayerNormForward& io);
/// The reference backward, in double: dx, and dweight / dbias summed over all rows.
void cpu_layer_norm_backward(const LayerNormShape& shape, const LayerNormBackward& io);

}  // namespace shardscope::kernels
