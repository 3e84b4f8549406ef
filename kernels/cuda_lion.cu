#include "kernels/cuda_lion.hpp"

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

struct LionOp {
  LionCoefficients c;
  FlatParams flat;
  LionState state;

  __device__ void operator()(std::size_t i) const {
    const float g = cuda_detail::load_grad(flat.grads, i);
    const float m = state.exp_avg[i];
    const float blend = m * c.beta1 + g * c.one_minus_beta1;
    const float sign = static_cast<float>((blend > 0.0f) - (blend < 0.0f));
    const float p = flat.params[i] * c.after_decay + sign * c.neg_lr;
    state.exp_avg[i] = m * c.beta2 + g * c.one_minus_beta2;
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
};

}  // namespace

void launch_cuda_lion(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                      cudaStream_t stream) {
  cuda_detail::launch_elementwise(LionOp{c, flat, state}, flat.count, stream, "launch_cuda_lion");
}

void cuda_lion_step(const LionOptions& options, const FlatParams& flat, const LionState& state, std::int64_t step,
                    cudaStream_t stream) {
  CudaNvtxRange range("cuda_lion_step");
  const LionCoefficients c = lion_coefficients(options, step);
  cuda_detail::check_device_flat_params(flat, "cuda_lion_step");
  check_device_pointer(state.exp_avg, flat.count, "cuda_lion_step", "exp_avg");
  launch_cuda_lion(c, flat, state, stream);
}

}  // namespace shardscope::kernels
