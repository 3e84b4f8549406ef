#include "kernels/cuda_unscale.hpp"

#include <cmath>
#include <string>

#include "kernels/cuda_common.cuh"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {

void launch_cuda_unscale_and_check(float* grads, std::size_t count, float inv_scale, int* found_device,
                                   cudaStream_t stream) {
  const bool write = inv_scale != 1.0f;
  cuda_detail::launch_elementwise(
      [=] __device__(std::size_t i) {
        const float g = grads[i];
        if (!isfinite(g)) *found_device = 1;  // every writer stores the same value
        if (write) grads[i] = g * inv_scale;
      },
      count, stream, "launch_cuda_unscale_and_check");
}

void cuda_unscale_and_check_async(float* grads, std::size_t count, float inv_scale, int* found_device,
                                  cudaStream_t stream) {
  CudaNvtxRange range("cuda_unscale_and_check");
  if (!std::isfinite(inv_scale))
    throw KernelError("cuda_unscale_and_check: inv_scale is " + std::to_string(inv_scale) +
                      "; it must be finite (1 / loss_scale with a loss scale > 0)");
  check_device_pointer(grads, count, "cuda_unscale_and_check", "grads");
  check_device_pointer(found_device, 1, "cuda_unscale_and_check", "found_device");
  launch_cuda_unscale_and_check(grads, count, inv_scale, found_device, stream);
}

bool cuda_unscale_and_check(float* grads, std::size_t count, float inv_scale, cudaStream_t stream) {
  void* flag = nullptr;
  SHARDSCOPE_CUDA_CHECK(cudaMallocAsync(&flag, sizeof(int), stream), "cuda_unscale_and_check");
  int found = 0;
  try {
    SHARDSCOPE_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), stream), "cuda_unscale_and_check");
    cuda_unscale_and_check_async(grads, count, inv_scale, static_cast<int*>(flag), stream);
    SHARDSCOPE_CUDA_CHECK(cudaMemcpyAsync(&found, flag, sizeof found, cudaMemcpyDeviceToHost, stream),
                          "cuda_unscale_and_check");
    SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream), "cuda_unscale_and_check");
  } catch (...) {
    cudaFreeAsync(flag, stream);
    throw;
  }
  SHARDSCOPE_CUDA_CHECK(cudaFreeAsync(flag, stream), "cuda_unscale_and_check");
  return found != 0;
}

}  // namespace shardscope::kernels
