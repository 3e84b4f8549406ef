#include "kernels/cuda_layer_norm.hpp"

#include <string>

#include "kernels/cuda_common.cuh"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

using cuda_detail::from_float;
using cuda_detail::Pack;
using cuda_detail::to_float;

constexpr int kThreads = 256;
constexpr int kMaxPacksPerThread = 2;  // registers: a row of up to 2 x 256 packs of 16 bytes
// Backward blocks per multiprocessor: the one-pack bf16 kernel takes 64 registers a thread, so four
// blocks of 256 fit an SM; fewer leave too few rows in flight to keep memory busy (measured: two
// per SM moved 1.6 TB/s on an H200).
constexpr int kBackwardBlocksPerSm = 4;
// The partials' reduction: 32 columns x 8 lanes of partial rows per block, so each warp reads 32
// consecutive floats and every column has 8 sums in flight.
constexpr int kPartialColumns = 32;
constexpr int kPartialLanes = kThreads / kPartialColumns;

// Sum over the block (every thread gets it); two calls may follow each other.
__device__ inline float block_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  __shared__ float warp_sums[kThreads / 32];
  __syncthreads();  // an earlier call's readers are done with warp_sums
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];  // the same order in every thread
  return total;
}

template <class T, int N, int P>
__device__ inline void load_packs(const T* row, int packs, float (&v)[P][N]) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int idx = threadIdx.x + p * kThreads;
    if (idx >= packs) continue;
    const Pack<T, N> pack = reinterpret_cast<const Pack<T, N>*>(row)[idx];
#pragma unroll
    for (int k = 0; k < N; ++k) v[p][k] = to_float(pack.v[k]);
  }
}

template <class T, int P>
__global__ void layer_norm_forward_kernel(LayerNormShape s, LayerNormForward io) {
  constexpr int N = 16 / sizeof(T);
  const int packs = static_cast<int>(s.width / N);
  float w[P][N], b[P][N];
  load_packs<T, N, P>(static_cast<const T*>(io.weight), packs, w);
  load_packs<T, N, P>(static_cast<const T*>(io.bias), packs, b);
  for (std::int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    float v[P][N];
    load_packs<T, N, P>(static_cast<const T*>(io.x) + r * s.width, packs, v);
    float sum = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (threadIdx.x + p * kThreads < packs)
#pragma unroll
        for (int k = 0; k < N; ++k) sum += v[p][k];
    const float mean = block_sum(sum) / static_cast<float>(s.width);
    float squares = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (threadIdx.x + p * kThreads < packs)
#pragma unroll
        for (int k = 0; k < N; ++k) squares += (v[p][k] - mean) * (v[p][k] - mean);
    const float rstd = rsqrtf(block_sum(squares) / static_cast<float>(s.width) + s.eps);
    T* y = static_cast<T*>(io.y) + r * s.width;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int idx = threadIdx.x + p * kThreads;
      if (idx >= packs) continue;
      Pack<T, N> out;
#pragma unroll
      for (int k = 0; k < N; ++k) out.v[k] = from_float<T>((v[p][k] - mean) * rstd * w[p][k] + b[p][k]);
      reinterpret_cast<Pack<T, N>*>(y)[idx] = out;
    }
    if (threadIdx.x == 0) {
      io.mean[r] = mean;
      io.rstd[r] = rstd;
    }
  }
}

// dx = rstd * (g - (sum(g) + x_hat * sum(g * x_hat)) / width) with g = dy * weight; each thread
// also sums dy * x_hat and dy of its columns over this block's rows.
template <class T, int P>
__global__ void layer_norm_backward_kernel(LayerNormShape s, LayerNormBackward io, float* partial_dw,
                                           float* partial_db) {
  constexpr int N = 16 / sizeof(T);
  const int packs = static_cast<int>(s.width / N);
  float w[P][N], acc_dw[P][N] = {}, acc_db[P][N] = {};
  load_packs<T, N, P>(static_cast<const T*>(io.weight), packs, w);
  for (std::int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    float xhat[P][N], dy[P][N];
    load_packs<T, N, P>(static_cast<const T*>(io.x) + r * s.width, packs, xhat);
    load_packs<T, N, P>(static_cast<const T*>(io.dy) + r * s.width, packs, dy);
    const float mean = io.mean[r], rstd = io.rstd[r];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if (threadIdx.x + p * kThreads >= packs) continue;
#pragma unroll
      for (int k = 0; k < N; ++k) {
        xhat[p][k] = (xhat[p][k] - mean) * rstd;
        const float g = dy[p][k] * w[p][k];
        sum_g += g;
        sum_gx += g * xhat[p][k];
        acc_dw[p][k] += dy[p][k] * xhat[p][k];
        acc_db[p][k] += dy[p][k];
      }
    }
    const float mean_g = block_sum(sum_g) / static_cast<float>(s.width);
    const float mean_gx = block_sum(sum_gx) / static_cast<float>(s.width);
    T* dx = static_cast<T*>(io.dx) + r * s.width;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int idx = threadIdx.x + p * kThreads;
      if (idx >= packs) continue;
      Pack<T, N> out;
#pragma unroll
      for (int k = 0; k < N; ++k)
        out.v[k] = from_float<T>(rstd * (dy[p][k] * w[p][k] - mean_g - xhat[p][k] * mean_gx));
      reinterpret_cast<Pack<T, N>*>(dx)[idx] = out;
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int idx = threadIdx.x + p * kThreads;
    if (idx >= packs) continue;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      partial_dw[blockIdx.x * s.width + idx * N + k] = acc_dw[p][k];
      partial_db[blockIdx.x * s.width + idx * N + k] = acc_db[p][k];
    }
  }
}

// Column j of d weight and d bias: lane l of a block adds the partials of blocks l, l + 8, ... in
// order, then lane 0 adds the 8 lane sums in order (deterministic).
template <class T>
__global__ void layer_norm_partials_kernel(const float* partial_dw, const float* partial_db, unsigned blocks,
                                           std::int64_t width, T* dweight, T* dbias) {
  const int column = static_cast<int>(threadIdx.x) % kPartialColumns, lane = static_cast<int>(threadIdx.x) / kPartialColumns;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kPartialColumns + column;
  float dw = 0.0f, db = 0.0f;
  if (j < width)
    for (unsigned b = static_cast<unsigned>(lane); b < blocks; b += kPartialLanes) {
      dw += partial_dw[b * width + j];
      db += partial_db[b * width + j];
    }
  __shared__ float lane_dw[kPartialLanes][kPartialColumns], lane_db[kPartialLanes][kPartialColumns];
  lane_dw[lane][column] = dw;
  lane_db[lane][column] = db;
  __syncthreads();
  if (lane != 0 || j >= width) return;
  for (int l = 1; l < kPartialLanes; ++l) {
    dw += lane_dw[l][column];
    db += lane_db[l][column];
  }
  dweight[j] = from_float<T>(dw);
  dbias[j] = from_float<T>(db);
}

int packs_per_thread(const LayerNormShape& s) {
  const auto pack = static_cast<std::int64_t>(16 / dtype_size(s.dtype));
  return static_cast<int>((s.width / pack + kThreads - 1) / kThreads);
}

// Multiprocessors of the current device (read once per device).
int multiprocessors() {
  static int counts[64] = {};
  int device = 0;
  SHARDSCOPE_CUDA_CHECK(cudaGetDevice(&device), "cuda_layer_norm");
  if (device < 0 || device >= 64) device = 0;
  if (counts[device] == 0)
    SHARDSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device), "cuda_layer_norm");
  return counts[device];
}

unsigned backward_blocks(const LayerNormShape& s) {
  const auto most = static_cast<std::int64_t>(kBackwardBlocksPerSm) * multiprocessors();
  return static_cast<unsigned>(s.rows < most ? s.rows : most);
}

template <class T>
void forward_typed(const LayerNormShape& s, const LayerNormForward& io, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(s.rows < (1 << 20) ? s.rows : (1 << 20));
  if (packs_per_thread(s) == 1)
    layer_norm_forward_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(s, io);
  else
    layer_norm_forward_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(s, io);
}

template <class T>
void backward_typed(const LayerNormShape& s, const LayerNormBackward& io, float* workspace, cudaStream_t stream) {
  const unsigned blocks = backward_blocks(s);
  float* partial_dw = workspace;
  float* partial_db = workspace + static_cast<std::size_t>(blocks) * static_cast<std::size_t>(s.width);
  if (blocks > 0) {  // no rows: d weight and d bias are zeros, written below
    if (packs_per_thread(s) == 1)
      layer_norm_backward_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(s, io, partial_dw, partial_db);
    else
      layer_norm_backward_kernel<T, 2><<<blocks, kThreads, 0, stream>>>(s, io, partial_dw, partial_db);
    SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_layer_norm_backward");
  }
  const unsigned columns = static_cast<unsigned>((s.width + kPartialColumns - 1) / kPartialColumns);
  layer_norm_partials_kernel<T><<<columns, kThreads, 0, stream>>>(partial_dw, partial_db, blocks, s.width,
                                                                  static_cast<T*>(io.dweight), static_cast<T*>(io.dbias));
}

// The buffers both entry points share: x (and the row statistics) and the width-long weight.
void check_common_buffers(const LayerNormShape& s, const void* x, const void* weight, const float* mean,
                          const float* rstd, const char* kernel) {
  check_device_pointer(x, static_cast<std::size_t>(s.rows * s.width), kernel, "x");
  check_device_pointer(weight, static_cast<std::size_t>(s.width), kernel, "weight");
  check_device_pointer(mean, static_cast<std::size_t>(s.rows), kernel, "mean");
  check_device_pointer(rstd, static_cast<std::size_t>(s.rows), kernel, "rstd");
}

void check_fit(const LayerNormShape& s, const void* const* pointers, std::size_t count, const char* kernel) {
  check_layer_norm_shape(s, kernel);
  if (!cuda_layer_norm_fits(s, pointers, count))
    throw KernelError(std::string(kernel) + ": width " + std::to_string(s.width) + " of " + dtype_name(s.dtype) +
                      " is not a whole number of 16-byte packs up to " +
                      std::to_string(kMaxPacksPerThread * kThreads) +
                      ", or a buffer is not 16-byte aligned; use torch's layer_norm for it");
}

}  // namespace

bool cuda_layer_norm_fits(const LayerNormShape& s, const void* const* pointers, std::size_t count) {
  const auto pack = static_cast<std::int64_t>(16 / dtype_size(s.dtype));
  if (s.width <= 0 || s.width % pack != 0 || s.width / pack > kMaxPacksPerThread * kThreads) return false;
  for (std::size_t i = 0; i < count; ++i)
    if (!cuda_detail::aligned16(pointers[i])) return false;
  return true;
}

std::size_t cuda_layer_norm_workspace_floats(const LayerNormShape& s) {
  return 2 * static_cast<std::size_t>(backward_blocks(s)) * static_cast<std::size_t>(s.width > 0 ? s.width : 0);
}

void launch_cuda_layer_norm_forward(const LayerNormShape& s, const LayerNormForward& io, cudaStream_t stream) {
  if (s.rows == 0) return;
  switch (s.dtype) {
    case Dtype::kBFloat16: forward_typed<__nv_bfloat16>(s, io, stream); break;
    case Dtype::kFloat16: forward_typed<__half>(s, io, stream); break;
    case Dtype::kFloat32: forward_typed<float>(s, io, stream); break;
  }
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_layer_norm_forward");
}

void launch_cuda_layer_norm_backward(const LayerNormShape& s, const LayerNormBackward& io, float* workspace,
                                     cudaStream_t stream) {
  switch (s.dtype) {
    case Dtype::kBFloat16: backward_typed<__nv_bfloat16>(s, io, workspace, stream); break;
    case Dtype::kFloat16: backward_typed<__half>(s, io, workspace, stream); break;
    case Dtype::kFloat32: backward_typed<float>(s, io, workspace, stream); break;
  }
  SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_layer_norm_backward");
}

void cuda_layer_norm_forward(const LayerNormShape& s, const LayerNormForward& io, cudaStream_t stream) {
  CudaNvtxRange range("cuda_layer_norm_forward");
  const char* kernel = "cuda_layer_norm_forward";
  const void* pointers[] = {io.x, io.weight, io.bias, io.y};
  check_fit(s, pointers, 4, kernel);
  check_common_buffers(s, io.x, io.weight, io.mean, io.rstd, kernel);
  check_device_pointer(io.y, static_cast<std::size_t>(s.rows * s.width), kernel, "y");
  check_device_pointer(io.bias, static_cast<std::size_t>(s.width), kernel, "bias");
  launch_cuda_layer_norm_forward(s, io, stream);
}

void cuda_layer_norm_backward(const LayerNormShape& s, const LayerNormBackward& io, float* workspace,
                              cudaStream_t stream) {
  CudaNvtxRange range("cuda_layer_norm_backward");
  const char* kernel = "cuda_layer_norm_backward";
  const void* pointers[] = {io.dy, io.x, io.weight, io.dx};
  check_fit(s, pointers, 4, kernel);
  check_common_buffers(s, io.x, io.weight, io.mean, io.rstd, kernel);
  const auto n = static_cast<std::size_t>(s.rows * s.width), w = static_cast<std::size_t>(s.width);
  check_device_pointer(io.dy, n, kernel, "dy");
  check_device_pointer(io.dx, n, kernel, "dx");
  check_device_pointer(io.dweight, w, kernel, "dweight");
  check_device_pointer(io.dbias, w, kernel, "dbias");
  check_device_pointer(workspace, cuda_layer_norm_workspace_floats(s), kernel, "workspace");
  launch_cuda_layer_norm_backward(s, io, workspace, stream);
}

}  // namespace shardscope::kernels
