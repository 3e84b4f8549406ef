#pragma once
// CUDA gradient unscaling with the inf/NaN check in one pass, as cpu_unscale (the check looks at
// the values before scaling, as torch's _amp_foreach_non_finite_check_and_unscale_).

#include <cuda_runtime_api.h>

#include <cstddef>

namespace shardscope::kernels {

/// Enqueues grads *= inv_scale (skipped when 1) and sets *found_device to 1 on any inf/NaN; never
/// clears it, so one flag can gather several buffers. No precondition checks.
void launch_cuda_unscale_and_check(float* grads, std::size_t count, float inv_scale, int* found_device,
                                   cudaStream_t stream);
/// Checked entry point of launch_cuda_unscale_and_check.
void cuda_unscale_and_check_async(float* grads, std::size_t count, float inv_scale, int* found_device,
                                  cudaStream_t stream);
/// Synchronous convenience: clears a flag, runs, waits, returns whether any inf/NaN was seen.
bool cuda_unscale_and_check(float* grads, std::size_t count, float inv_scale, cudaStream_t stream);

}  // namespace shardscope::kernels
