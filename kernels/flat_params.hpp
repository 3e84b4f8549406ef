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

/// Throws KernelError naming `kernel` when a non-empty buffer set has a null pointer or the
/// copy asks for fp32 (which would alias the master weights' role).
void check_flat_params(const FlatParams& flat, const char* kernel);
/// Throws KernelError naming `kernel` and `what` when `state` is null for a non-empty buffer.
void check_state_buffer(const void* state, std::size_t count, const char* kernel, const char* what);
/// Throws KernelError unless step >= 1 (steps count from 1, as torch.optim and DeepSpeed do).
void check_step(std::int64_t step, const char* kernel);

}  // namespace shardscope::kernels
