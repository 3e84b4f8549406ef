#pragma once
// The buffers every CPU and CUDA optimizer kernel works on: a flat fp32 master copy of the
// parameters, the gradients (fp32, or bf16/fp16 widened on the fly), and an optional 16-bit copy
// of the updated parameters for the mixed-precision path (the model's bf16/fp16 weights).

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.hpp"

namespace shardscope::kernels {

struct GradInput {
  const void* data = nullptr;
  Dtype dtype = Dtype::kFloat32;
  /// Multiplied into every gradient as it is read, in fp32: the engine's unscale (1 / loss scale /
  /// world size) and clip coefficient in one factor, so neither needs a pass over the gradients.
  float scale = 1.0f;
};

struct ParamCopyOutput {
  void* data = nullptr;  ///< nullptr: no copy is written
  Dtype dtype = Dtype::kBFloat16;
};

struct FlatParams {
  float* params = nullptr;  ///< fp32 master weights, updated in place
  GradInput grads;
  ParamCopyOutput copy;
  std::size_t count = 0;
};

/// Gradient element `i` as fp32, times grads.scale (the scalar paths).
inline float load_grad(const GradInput& grads, std::size_t i) {
  return load_as_float(grads.data, grads.dtype, i) * grads.scale;
}
/// The same for a vector type V of the SIMD paths (VecAvx2, VecAvx512): same roundings, same bits.
template <class V>
typename V::Reg load_grad_vector(const GradInput& grads, std::size_t i) {
  return V::mul(V::load_as(grads.data, grads.dtype, i), V::set1(grads.scale));
}

/// Throws KernelError naming `kernel` when a non-empty buffer set has a null pointer or the
/// copy asks for fp32 (which would alias the master weights' role).
void check_flat_params(const FlatParams& flat, const char* kernel);
/// Throws KernelError naming `kernel` and `what` when `state` is null for a non-empty buffer.
void check_state_buffer(const void* state, std::size_t count, const char* kernel, const char* what);
/// Throws KernelError unless step >= 1 (steps count from 1, as torch.optim and DeepSpeed do).
void check_step(std::int64_t step, const char* kernel);

}  // namespace shardscope::kernels
