#pragma once
// Device-side helpers shared by the CUDA kernel families: dtype loads/stores (round to nearest
// even, as the CPU converters), a grid-stride elementwise launcher, and the flat-buffer checks.
// The CUDA sources build with --fmad=false so each element takes the same roundings, in the same
// order, as the CPU scalar reference.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda_check.hpp"
#include "kernels/dtype.hpp"
#include "kernels/flat_params.hpp"

namespace shardscope::kernels::cuda_detail {

inline constexpr unsigned kBlockSize = 256;
/// Enough blocks to fill an H200 several times over; the loops are grid-stride beyond that.
inline constexpr unsigned kMaxBlocks = 4096;

__device__ inline float load_as(const void* data, Dtype dtype, std::size_t i) {
  switch (dtype) {
    case Dtype::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case Dtype::kFloat16: return __half2float(static_cast<const __half*>(data)[i]);
    case Dtype::kFloat32: break;
  }
  return static_cast<const float*>(data)[i];
}

__device__ inline void store_as(void* data, Dtype dtype, std::size_t i, float v) {
  switch (dtype) {
    case Dtype::kBFloat16: static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(v); return;
    case Dtype::kFloat16: static_cast<__half*>(data)[i] = __float2half_rn(v); return;
    case Dtype::kFloat32: static_cast<float*>(data)[i] = v; return;
  }
}

inline unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + kBlockSize - 1) / kBlockSize;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class Op>
__global__ void elementwise_kernel(Op op, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    op(i);
}

/// Runs op(i) for every i in [0, count) on `stream`; checks the launch.
template <class Op>
void launch_elementwise(const Op& op, std::size_t count, cudaStream_t stream, const char* context) {
  if (count == 0) return;
  elementwise_kernel<<<grid_for(count), kBlockSize, 0, stream>>>(op, count);
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), context);
}

/// Sum of `v` over the block in a fixed tree (deterministic); every thread gets the result.
/// Needs blockDim.x == kBlockSize; may be called several times in one kernel.
__device__ inline double block_sum(double v) {
  __shared__ double shared[kBlockSize];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = kBlockSize / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // the next call may overwrite shared[] only after everyone has read it
  return total;
}

/// One block: sums partials[0, count) with thread t taking t, t + kBlockSize, ... in order.
__device__ inline double sum_partials(const double* partials, unsigned count) {
  double v = 0.0;
  for (unsigned j = threadIdx.x; j < count; j += kBlockSize) v += partials[j];
  return block_sum(v);
}

/// Host-side: checks the pointers of `flat` are device memory (and the copy is 16-bit).
inline void check_device_flat_params(const FlatParams& flat, const char* kernel) {
  check_flat_params(flat, kernel);
  check_device_pointer(flat.params, flat.count, kernel, "params");
  check_device_pointer(flat.grads.data, flat.count, kernel, "grads");
  if (flat.copy.data) check_device_pointer(flat.copy.data, flat.count, kernel, "copy");
}

}  // namespace shardscope::kernels::cuda_detail
