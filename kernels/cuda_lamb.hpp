#pragma once
// CUDA Lamb on one flat device tensor, FusedLamb's two phases: (1) moments plus per-block partial
// sums of ||w||^2 and ||update||^2, (2) one block reduces them in a fixed order and computes the
// clamped trust ratio, (3) the update is recomputed and applied. Same maths as cpu_lamb.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu_lamb.hpp"

namespace shardscope::kernels {

/// Doubles of device workspace a Lamb step needs. After the step, on the stream,
/// workspace[0] = ||w||^2, workspace[1] = ||update||^2, workspace[2] = the trust ratio.
std::size_t cuda_lamb_workspace_doubles();
/// Enqueues the three kernels with precomputed coefficients; no precondition checks.
void launch_cuda_lamb(const LambCoefficients& c, const FlatParams& flat, const LambState& state, double* workspace,
                      cudaStream_t stream);
/// Checked entry point: validates options, step, device pointers and the workspace, then launches.
void cuda_lamb_step(const LambOptions& options, const FlatParams& flat, const LambState& state, std::int64_t step,
                    double* workspace, cudaStream_t stream);

}  // namespace shardscope::kernels
