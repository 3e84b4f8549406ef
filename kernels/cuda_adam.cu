#include "kernels/cuda_adam.hpp"

#include <cstdint>

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

// One element's update, shared by the scalar and the 4-wide paths so both round alike.
__device__ inline float adam_update(const AdamCoefficients& c, float p, float g, float& m, float& v) {
  if (c.l2_decay != 0.0f) g = p * c.l2_decay + g;
  m = m * c.beta1 + g * c.one_minus_beta1;
  v = v * c.beta2 + (g * g) * c.one_minus_beta2;
  const float update = m / (sqrtf(v) * c.bias_correction2_rsqrt + c.eps);
  if (c.decoupled_decay != 0.0f) p = p + p * c.decoupled_decay;
  return update * c.step_size + p;
}

struct AdamOp {
  AdamCoefficients c;
  FlatParams flat;
  AdamState state;

  __device__ void operator()(std::size_t i) const {
    float m = state.exp_avg[i], v = state.exp_avg_sq[i];
    const float p = adam_update(c, flat.params[i], cuda_detail::load_grad(flat.grads, i), m, v);
    state.exp_avg[i] = m;
    state.exp_avg_sq[i] = v;
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
};

// The memory-bound step moves 28 bytes per element (bf16 gradients and copy): four elements per
// thread with 16-byte loads of the fp32 buffers keep more bytes in flight than one at a time.
__global__ void adam_vec4_kernel(AdamOp op, std::size_t quads) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t q = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < quads; q += stride) {
    const std::size_t i = 4 * q;
    float4 p = *reinterpret_cast<const float4*>(op.flat.params + i);
    float4 m = *reinterpret_cast<const float4*>(op.state.exp_avg + i);
    float4 v = *reinterpret_cast<const float4*>(op.state.exp_avg_sq + i);
    float g[4];
    cuda_detail::load_grad4(op.flat.grads, i, g);
    p.x = adam_update(op.c, p.x, g[0], m.x, v.x);
    p.y = adam_update(op.c, p.y, g[1], m.y, v.y);
    p.z = adam_update(op.c, p.z, g[2], m.z, v.z);
    p.w = adam_update(op.c, p.w, g[3], m.w, v.w);
    *reinterpret_cast<float4*>(op.state.exp_avg + i) = m;
    *reinterpret_cast<float4*>(op.state.exp_avg_sq + i) = v;
    *reinterpret_cast<float4*>(op.flat.params + i) = p;
    if (op.flat.copy.data) cuda_detail::store4_as(op.flat.copy.data, op.flat.copy.dtype, i, p);
  }
}

}  // namespace

void launch_cuda_adam(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                      cudaStream_t stream) {
  const AdamOp op{c, flat, state};
  const bool wide = cuda_detail::aligned16(flat.params) && cuda_detail::aligned16(state.exp_avg) &&
                    cuda_detail::aligned16(state.exp_avg_sq) && cuda_detail::grads4_aligned(flat.grads) &&
                    (!flat.copy.data || cuda_detail::copy4_aligned(flat.copy));
  const std::size_t quads = wide ? flat.count / 4 : 0;
  if (quads > 0) {
    adam_vec4_kernel<<<cuda_detail::grid_for(quads), cuda_detail::kBlockSize, 0, stream>>>(op, quads);
    SHARDSCOPE_CUDA_CHECK(cudaGetLastError(), "launch_cuda_adam");
  }
  // The elements the quads leave (all of them when a buffer is not aligned for 16-byte access).
  const std::size_t done = 4 * quads;
  const std::size_t tail = flat.count - done;
  if (tail == 0) return;
  FlatParams rest = flat;
  rest.params += done;
  rest.grads.data = static_cast<const char*>(flat.grads.data) + done * dtype_size(flat.grads.dtype);
  if (rest.copy.data) rest.copy.data = static_cast<char*>(flat.copy.data) + done * dtype_size(flat.copy.dtype);
  rest.count = tail;
  cuda_detail::launch_elementwise(AdamOp{c, rest, {state.exp_avg + done, state.exp_avg_sq + done}}, tail, stream,
                                  "launch_cuda_adam");
}

void cuda_adam_step(const AdamOptions& options, const FlatParams& flat, const AdamState& state, std::int64_t step,
                    cudaStream_t stream) {
  CudaNvtxRange range("cuda_adam_step");
  const AdamCoefficients c = adam_coefficients(options, step);
  cuda_detail::check_device_flat_params(flat, "cuda_adam_step");
  check_device_pointer(state.exp_avg, flat.count, "cuda_adam_step", "exp_avg");
  check_device_pointer(state.exp_avg_sq, flat.count, "cuda_adam_step", "exp_avg_sq");
  launch_cuda_adam(c, flat, state, stream);
}

}  // namespace shardscope::kernels
