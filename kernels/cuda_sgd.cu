#include "kernels/cuda_sgd.hpp"

#include "kernels/cuda_common.cuh"

namespace shardscope::kernels {
namespace {

struct SgdOp {
  SgdCoefficients c;
  FlatParams flat;
  SgdState state;

  __device__ void operator()(std::size_t i) const {
    float p = flat.params[i];
    float g = cuda_detail::load_grad(flat.grads, i);
    if (c.weight_decay != 0.0f) g = p * c.weight_decay + g;
    if (c.momentum != 0.0f) {
      const float buf = c.first_step ? g : state.momentum_buffer[i] * c.momentum + g * c.one_minus_dampening;
      state.momentum_buffer[i] = buf;
      g = c.nesterov ? buf * c.momentum + g : buf;
    }
    p = g * c.neg_lr + p;
    flat.params[i] = p;
    if (flat.copy.data) cuda_detail::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
};

}  // namespace

void launch_cuda_sgd(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state, cudaStream_t stream) {
  cuda_detail::launch_elementwise(SgdOp{c, flat, state}, flat.count, stream, "launch_cuda_sgd");
}

void cuda_sgd_step(const SgdOptions& options, const FlatParams& flat, const SgdState& state, std::int64_t step,
                   cudaStream_t stream) {
  CudaNvtxRange range("cuda_sgd_step");
  const SgdCoefficients c = sgd_coefficients(options, step);
  cuda_detail::check_device_flat_params(flat, "cuda_sgd_step");
  if (options.momentum != 0.0)
    check_device_pointer(state.momentum_buffer, flat.count, "cuda_sgd_step", "momentum_buffer");
  launch_cuda_sgd(c, flat, state, stream);
}

}  // namespace shardscope::kernels
