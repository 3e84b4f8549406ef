#pragma once
// CUDA SGD with momentum/Nesterov/weight decay on flat device buffers (torch.optim.SGD's maths,
// as cpu_sgd).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu_sgd.hpp"

namespace shardscope::kernels {

/// Enqueues the update with precomputed coefficients on `stream`; no precondition checks.
void launch_cuda_sgd(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state, cudaStream_t stream);
/// Checked entry point: validates options, step and device pointers, then launches on `stream`.
void cuda_sgd_step(const SgdOptions& options, const FlatParams& flat, const SgdState& state, std::int64_t step,
                   cudaStream_t stream);

}  // namespace shardscope::kernels
