#pragma once
// CUDA Lion on flat device buffers (FusedLion's maths, as cpu_lion).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu_lion.hpp"

namespace shardscope::kernels {

/// Enqueues the update with precomputed coefficients on `stream`; no precondition checks.
void launch_cuda_lion(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                      cudaStream_t stream);
/// Checked entry point: validates options, step and device pointers, then launches on `stream`.
void cuda_lion_step(const LionOptions& options, const FlatParams& flat, const LionState& state, std::int64_t step,
                    cudaStream_t stream);

}  // namespace shardscope::kernels
