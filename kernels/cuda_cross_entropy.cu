#include "kernels/cuda_cross_entropy.hpp"

#include <cmath>
#include <cstdint>

#include "kernels/cuda_common.cuh"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

constexpr unsigned kThreads = 256;  // 8 warps per row; a row of 50k bf16 logits is 25 loads per thread
constexpr unsigned kMaxRowBlocks = 1u << 20;

using cuda_detail::from_float;
using cuda_detail::Pack;
using cuda_detail::to_float;

// Running (max, sum of exp(x - max)) pairs; merging never forms -inf - -inf.
__device__ inline void merge(float& m, float& s, float m2, float s2) {
  if (m2 == -INFINITY) return;
  if (m2 > m) {
    s = s * expf(m - m2) + s2;
    m = m2;
  } else {
    s = s + s2 * expf(m2 - m);
  }
}

// The block's (max, sum) for thread 0 and every thread; needs blockDim.x == kThreads.
__device__ inline void block_merge(float& m, float& s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m2 = __shfl_down_sync(0xffffffffu, m, offset);
    const float s2 = __shfl_down_sync(0xffffffffu, s, offset);
    merge(m, s, m2, s2);
  }
  __shared__ float warp_m[kThreads / 32], warp_s[kThreads / 32];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < kThreads / 32; ++w) merge(m, s, warp_m[w], warp_s[w]);
    warp_m[0] = m;
    warp_s[0] = s;
  }
  __syncthreads();
  m = warp_m[0];
  s = warp_s[0];
  __syncthreads();  // the next row may overwrite the shared slots only after everyone read them
}

template <class T, int N>
__global__ void cross_entropy_forward_kernel(CrossEntropyRows rows, float* row_lse, float* row_loss) {
  for (std::int64_t r = blockIdx.x; r < rows.rows; r += gridDim.x) {
    const T* x = static_cast<const T*>(rows.logits) + r * rows.row_stride;
    float m = -INFINITY, s = 0.0f;
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * N; i < rows.vocab; i += kThreads * N) {
      const Pack<T, N> p = *reinterpret_cast<const Pack<T, N>*>(x + i);
      float v[N];
      float vm = -INFINITY;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        v[k] = to_float(p.v[k]);
        vm = fmaxf(vm, v[k]);
      }
      if (vm > m) {
        s = s * expf(m - vm);
        m = vm;
      }
      if (m == -INFINITY) continue;
#pragma unroll
      for (int k = 0; k < N; ++k) s += expf(v[k] - m);
    }
    block_merge(m, s);
    if (threadIdx.x == 0) {
      const float lse = m + logf(s);
      const std::int64_t t = rows.targets[r];
      float loss = 0.0f;
      if (t != rows.ignore_index) loss = (t >= 0 && t < rows.vocab) ? lse - to_float(x[t]) : NAN;
      row_lse[r] = lse;
      row_loss[r] = loss;
    }
  }
}

template <class T, int N>
__global__ void cross_entropy_backward_kernel(CrossEntropyRows rows, const float* row_lse, const float* scale,
                                              CrossEntropyGrad grad) {
  const float k_counted = *scale;
  for (std::int64_t r = blockIdx.x; r < rows.rows; r += gridDim.x) {
    const T* x = static_cast<const T*>(rows.logits) + r * rows.row_stride;
    T* g = static_cast<T*>(grad.data) + r * grad.row_stride;
    const std::int64_t t = rows.targets[r];
    const float k = t == rows.ignore_index ? 0.0f : k_counted;
    const float lse = row_lse[r];
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * N; i < rows.vocab; i += kThreads * N) {
      const Pack<T, N> p = *reinterpret_cast<const Pack<T, N>*>(x + i);
      Pack<T, N> out;
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const float one_hot = (i + j == t) ? 1.0f : 0.0f;
        out.v[j] = from_float<T>((expf(to_float(p.v[j]) - lse) - one_hot) * k);
      }
      *reinterpret_cast<Pack<T, N>*>(g + i) = out;
    }
  }
}

// 16-byte accesses when every row starts on a 16-byte boundary and holds whole packs; else one
// element at a time (a vocabulary that is not a multiple of 8, an odd stride).
template <class T>
int pack_width(const CrossEntropyRows& rows, const void* out, std::int64_t out_stride) {
  constexpr int kWide = 16 / sizeof(T);
  const bool wide = rows.vocab % kWide == 0 && rows.row_stride % kWide == 0 && cuda_detail::aligned16(rows.logits) &&
                    (!out || (out_stride % kWide == 0 && cuda_detail::aligned16(out)));
  return wide ? kWide : 1;
}

unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(rows < static_cast<std::int64_t>(kMaxRowBlocks) ? rows : kMaxRowBlocks);
}

template <class T>
void launch_forward_typed(const CrossEntropyRows& rows, float* row_lse, float* row_loss, cudaStream_t stream) {
  constexpr int kWide = 16 / sizeof(T);
  if (pack_width<T>(rows, nullptr, 0) == kWide)
    cross_entropy_forward_kernel<T, kWide><<<row_blocks(rows.rows), kThreads, 0, stream>>>(rows, row_lse, row_loss);
  else
    cross_entropy_forward_kernel<T, 1><<<row_blocks(rows.rows), kThreads, 0, stream>>>(rows, row_lse, row_loss);
}

template <class T>
void launch_backward_typed(const CrossEntropyRows& rows, const float* row_lse, const float* scale,
                           const CrossEntropyGrad& grad, cudaStream_t stream) {
  constexpr int kWide = 16 / sizeof(T);
  const unsigned blocks = row_blocks(rows.rows);
  if (pack_width<T>(rows, grad.data, grad.row_stride) == kWide)
    cross_entropy_backward_kernel<T, kWide><<<blocks, kThreads, 0, stream>>>(rows, row_lse, scale, grad);
  else
    cross_entropy_backward_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(rows, row_lse, scale, grad);
}

void check_grad(const CrossEntropyRows& rows, const CrossEntropyGrad& grad, const char* kernel) {
  if (rows.rows > 0 && grad.row_stride < rows.vocab)
    throw KernelError(std::string(kernel) + ": the gradient's row_stride " + std::to_string(grad.row_stride) +
                      " is shorter than a row of " + std::to_string(rows.vocab) + " logits");
}

}  // namespace

void launch_cuda_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss,
                                       cudaStream_t stream) {
  if (rows.rows == 0) return;
  switch (rows.dtype) {
    case Dtype::kBFloat16: launch_forward_typed<__nv_bfloat16>(rows, row_lse, row_loss, stream); break;
    case Dtype::kFloat16: launch_forward_typed<__half>(rows, row_lse, row_loss, stream); break;
    case Dtype::kFloat32: launch_forward_typed<float>(rows, row_lse, row_loss, stream); break;
  }
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_cross_entropy_forward");
}

void launch_cuda_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, const float* scale,
                                        const CrossEntropyGrad& grad, cudaStream_t stream) {
  if (rows.rows == 0) return;
  switch (rows.dtype) {
    case Dtype::kBFloat16: launch_backward_typed<__nv_bfloat16>(rows, row_lse, scale, grad, stream); break;
    case Dtype::kFloat16: launch_backward_typed<__half>(rows, row_lse, scale, grad, stream); break;
    case Dtype::kFloat32: launch_backward_typed<float>(rows, row_lse, scale, grad, stream); break;
  }
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_cross_entropy_backward");
}

void cuda_cross_entropy_forward(const CrossEntropyRows& rows, float* row_lse, float* row_loss, cudaStream_t stream) {
  CudaNvtxRange range("cuda_cross_entropy_forward");
  const char* kernel = "cuda_cross_entropy_forward";
  check_cross_entropy_rows(rows, kernel);
  const auto n = static_cast<std::size_t>(rows.rows);
  check_device_pointer(rows.logits, n * static_cast<std::size_t>(rows.row_stride), kernel, "logits");
  check_device_pointer(rows.targets, n, kernel, "targets");
  check_device_pointer(row_lse, n, kernel, "row_lse");
  check_device_pointer(row_loss, n, kernel, "row_loss");
  launch_cuda_cross_entropy_forward(rows, row_lse, row_loss, stream);
}

void cuda_cross_entropy_backward(const CrossEntropyRows& rows, const float* row_lse, const float* scale,
                                 const CrossEntropyGrad& grad, cudaStream_t stream) {
  CudaNvtxRange range("cuda_cross_entropy_backward");
  const char* kernel = "cuda_cross_entropy_backward";
  check_cross_entropy_rows(rows, kernel);
  check_grad(rows, grad, kernel);
  const auto n = static_cast<std::size_t>(rows.rows);
  check_device_pointer(rows.logits, n * static_cast<std::size_t>(rows.row_stride), kernel, "logits");
  check_device_pointer(rows.targets, n, kernel, "targets");
  check_device_pointer(row_lse, n, kernel, "row_lse");
  check_device_pointer(scale, rows.rows > 0 ? 1 : 0, kernel, "scale");
  check_device_pointer(grad.data, n * static_cast<std::size_t>(grad.row_stride), kernel, "grad");
  launch_cuda_cross_entropy_backward(rows, row_lse, scale, grad, stream);
}

}  // namespace shardscope::kernels
