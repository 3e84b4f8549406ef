#include "kernels/cuda_adam.hpp"

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

struct AdamOp {
  AdamCoefficients c;
  FlatParams flat;
  AdamState state;

  __device__ void operator()(std::size_t i) const {
    float p = flat.params[i];
    float g = cuda_detail::load_as(flat.grads.data, flat.grads.dtype, i);
    if (c.l2_decay != 0.0f) g = p * c.l2_decay + g;
    const float m = state.exp_avg[i] * c.beta1 + g * c.one_minus_beta1;
    const float v = state.exp_avg_sq[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    const float update = m / (sqrtf(v) * c.bias_correction2_rsqrt + c.eps);
    if (c.decoupled_decay != 0.0f) p = p + p * c.decoupled_decay;
    p = update * c.step_size + p;
    state.exp_avg[i] = m;
    state.exp_avg_sq[i] = v;
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
};

}  // namespace

void launch_cuda_adam(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                      cudaStream_t stream) {
  cuda_detail::launch_elementwise(AdamOp{c, flat, state}, flat.count, stream, "launch_cuda_adam");
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
