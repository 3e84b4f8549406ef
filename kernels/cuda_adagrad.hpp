#pragma once
// CUDA Adagrad on flat device buffers (torch.optim.Adagrad's maths, as cpu_adagrad).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu_adagrad.hpp"

namespace shardscope::kernels {

/// Enqueues the update with precomputed coefficients on `stream`; no precondition checks.
void launch_cuda_adagrad(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state,
                         cudaStream_t stream);
/// Checked entry point: validates options, step and device pointers, then launches on `stream`.
void cuda_adagrad_step(const AdagradOptions& options, const FlatParams& flat, const AdagradState& state,
                       std::int64_t step, cudaStream_t stream);

}  // namespace shardscope::kernels
