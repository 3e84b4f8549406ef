#include "kernels/cuda_adagrad.hpp"

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

struct AdagradOp {
  AdagradCoefficients c;
  FlatParams flat;
  AdagradState state;

  __device__ void operator()(std::size_t i) const {
    float p = flat.params[i];
    float g = cuda_detail::load_grad(flat.grads, i);
    if (c.weight_decay != 0.0f) g = p * c.weight_decay + g;
    const float sum = state.sum[i] + g * g;
    p = (g / (sqrtf(sum) + c.eps)) * c.neg_clr + p;
    state.sum[i] = sum;
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
};

}  // namespace

void launch_cuda_adagrad(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state,
                         cudaStream_t stream) {
  cuda_detail::launch_elementwise(AdagradOp{c, flat, state}, flat.count, stream, "launch_cuda_adagrad");
}

void cuda_adagrad_step(const AdagradOptions& options, const FlatParams& flat, const AdagradState& state,
                       std::int64_t step, cudaStream_t stream) {
  CudaNvtxRange range("cuda_adagrad_step");
  const AdagradCoefficients c = adagrad_coefficients(options, step);
  cuda_detail::check_device_flat_params(flat, "cuda_adagrad_step");
  check_device_pointer(state.sum, flat.count, "cuda_adagrad_step", "sum");
  launch_cuda_adagrad(c, flat, state, stream);
}

}  // namespace shardscope::kernels
