#pragma once
// CUDA Adam/AdamW on flat device buffers: one fused elementwise kernel (no multi-tensor apply:
// the engine's buffers are already flat), same maths and coefficients as cpu_adam.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu_adam.hpp"

namespace shardscope::kernels {

/// Enqueues the update with precomputed coefficients on `stream`; no precondition checks.
void launch_cuda_adam(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                      cudaStream_t stream);
/// Checked entry point: validates options, step and device pointers, then launches on `stream`.
void cuda_adam_step(const AdamOptions& options, const FlatParams& flat, const AdamState& state, std::int64_t step,
                    cudaStream_t stream);

}  // namespace shardscope::kernels
