#pragma once
// CUDA squared L2 norm (double accumulation, per-block partials reduced in a fixed order, so the
// same buffer gives the same bits on every run) and clip-by-scaling, as cpu_norm.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace shardscope::kernels {

/// Doubles of device workspace cuda_squared_l2_norm_async needs (one partial per block + result).
std::size_t cuda_norm_workspace_doubles();
/// Enqueues sum(x[i]^2) on `stream`; the result lands in workspace[0]. No precondition checks.
void launch_cuda_squared_norm(const float* x, std::size_t count, double* workspace, cudaStream_t stream);
/// Checked entry point of launch_cuda_squared_norm (device pointers, workspace present).
void cuda_squared_l2_norm_async(const float* x, std::size_t count, double* workspace, cudaStream_t stream);
/// Synchronous convenience: allocates the workspace on `stream`, waits, returns the sum.
double cuda_squared_l2_norm(const float* x, std::size_t count, cudaStream_t stream);
/// x[i] *= factor on `stream` (clip by scaling), checked.
void cuda_scale(float* x, std::size_t count, float factor, cudaStream_t stream);

}  // namespace shardscope::kernels
