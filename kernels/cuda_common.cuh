#pragma once
// Device-side helpers shared by the CUDA kernel families: dtype loads/stores (round to nearest
// even, as the CPU converters), a grid-stride elementwise launcher, and the flat-buffer checks.
// The CUDA sources build with --fmad=false so each element takes the same roundings, in the same
// order, as the CPU scalar reference.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

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

/// Gradient element `i` as fp32, times grads.scale (see GradInput).
__device__ inline float load_grad(const GradInput& grads, std::size_t i) {
  return load_as(grads.data, grads.dtype, i) * grads.scale;
}

__device__ inline void store_as(void* data, Dtype dtype, std::size_t i, float v) {
  switch (dtype) {
    case Dtype::kBFloat16: static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(v); return;
    case Dtype::kFloat16: static_cast<__half*>(data)[i] = __float2half_rn(v); return;
    case Dtype::kFloat32: static_cast<float*>(data)[i] = v; return;
  }
}

/// Four 16-bit values from element `i` of `data` (8-byte aligned) as fp32; Pair2 is __nv_bfloat162 or __half2.
template <class Pair2>
__device__ inline void load4_16bit(const void* data, std::size_t i, float out[4]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const unsigned short*>(data) + i);
  const Pair2 lo = *reinterpret_cast<const Pair2*>(&raw.x), hi = *reinterpret_cast<const Pair2*>(&raw.y);
  out[0] = __low2float(lo), out[1] = __high2float(lo), out[2] = __low2float(hi), out[3] = __high2float(hi);
}

/// Four consecutive gradients from element `i` (aligned, see grads4_aligned) as fp32, times the scale.
__device__ inline void load_grad4(const GradInput& grads, std::size_t i, float out[4]) {
  switch (grads.dtype) {
    case Dtype::kBFloat16: load4_16bit<__nv_bfloat162>(grads.data, i, out); break;
    case Dtype::kFloat16: load4_16bit<__half2>(grads.data, i, out); break;
    case Dtype::kFloat32: {
      const float4 v = *reinterpret_cast<const float4*>(static_cast<const float*>(grads.data) + i);
      out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
      break;
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = out[k] * grads.scale;
}

/// Writes two rounded pairs as one 8-byte store at element `i` of a 16-bit buffer.
template <class Pair2>
__device__ inline void store_pairs(void* data, std::size_t i, Pair2 lo, Pair2 hi) {
  uint2 raw;
  raw.x = *reinterpret_cast<const unsigned*>(&lo);
  raw.y = *reinterpret_cast<const unsigned*>(&hi);
  *reinterpret_cast<uint2*>(static_cast<unsigned short*>(data) + i) = raw;
}

/// Writes four fp32 values from element `i` of a 16-bit buffer (aligned, see copy4_aligned).
__device__ inline void store4_as(void* data, Dtype dtype, std::size_t i, float4 v) {
  if (dtype == Dtype::kBFloat16)
    store_pairs(data, i, __floats2bfloat162_rn(v.x, v.y), __floats2bfloat162_rn(v.z, v.w));
  else if (dtype == Dtype::kFloat16)
    store_pairs(data, i, __floats2half2_rn(v.x, v.y), __floats2half2_rn(v.z, v.w));
}

// N elements of T as one aligned 16-byte (or narrower) access.
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class T>
__device__ inline float to_float(T x);
template <>
__device__ inline float to_float<float>(float x) { return x; }
template <>
__device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <>
__device__ inline float to_float<__half>(__half x) { return __half2float(x); }

template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) { return x; }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }

inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }
inline bool aligned16(const void* p) { return aligned_to(p, 16); }
/// Whether load_grad4 may read the gradients four at a time (4 elements = 8 or 16 bytes).
inline bool grads4_aligned(const GradInput& g) { return aligned_to(g.data, 4 * dtype_size(g.dtype)); }
/// Whether store4_as may write the 16-bit copy four at a time.
inline bool copy4_aligned(const ParamCopyOutput& c) { return aligned_to(c.data, 4 * dtype_size(c.dtype)); }

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
