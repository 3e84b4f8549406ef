#include "kernels/cuda_norm.hpp"

#include "kernels/cuda_common.cuh"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

using cuda_detail::kBlockSize;

__global__ void squared_norm_partials_kernel(const float* x, std::size_t count, double* partials) {
  double v = 0.0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double d = x[i];
    v += d * d;
  }
  const double total = cuda_detail::block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void sum_partials_kernel(const double* partials, unsigned count, double* out) {
  const double total = cuda_detail::sum_partials(partials, count);
  if (threadIdx.x == 0) *out = total;
}

}  // namespace

std::size_t cuda_norm_workspace_doubles() { return cuda_detail::kMaxBlocks + 1; }

void launch_cuda_squared_norm(const float* x, std::size_t count, double* workspace, cudaStream_t stream) {
  const unsigned blocks = count == 0 ? 1 : cuda_detail::grid_for(count);
  squared_norm_partials_kernel<<<blocks, kBlockSize, 0, stream>>>(x, count, workspace + 1);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_squared_norm");
  sum_partials_kernel<<<1, kBlockSize, 0, stream>>>(workspace + 1, blocks, workspace);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_squared_norm");
}

void cuda_squared_l2_norm_async(const float* x, std::size_t count, double* workspace, cudaStream_t stream) {
  CudaNvtxRange range("cuda_squared_l2_norm");
  check_device_pointer(x, count, "cuda_squared_l2_norm", "x");
  check_device_pointer(workspace, cuda_norm_workspace_doubles(), "cuda_squared_l2_norm", "workspace");
  launch_cuda_squared_norm(x, count, workspace, stream);
}

double cuda_squared_l2_norm(const float* x, std::size_t count, cudaStream_t stream) {
  void* workspace = nullptr;
  SHARDSCOPE_CUDA_CHECK(cudaMallocAsync(&workspace, cuda_norm_workspace_doubles() * sizeof(double), stream),
                        "cuda_squared_l2_norm");
  double result = 0.0;
  try {
    cuda_squared_l2_norm_async(x, count, static_cast<double*>(workspace), stream);
    SHARDSCOPE_CUDA_CHECK(cudaMemcpyAsync(&result, workspace, sizeof result, cudaMemcpyDeviceToHost, stream),
                          "cuda_squared_l2_norm");
    SHARDSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream), "cuda_squared_l2_norm");
  } catch (...) {
    cudaFreeAsync(workspace, stream);
    throw;
  }
  SHARDSCOPE_CUDA_CHECK(cudaFreeAsync(workspace, stream), "cuda_squared_l2_norm");
  return result;
}

void cuda_scale(float* x, std::size_t count, float factor, cudaStream_t stream) {
  CudaNvtxRange range("cuda_scale");
  check_device_pointer(x, count, "cuda_scale", "x");
  cuda_detail::launch_elementwise([=] __device__(std::size_t i) { x[i] = x[i] * factor; }, count, stream,
                                  "cuda_scale");
}

}  // namespace shardscope::kernels
