#include "engine/models/fused_layer_norm.hpp"

#include <ATen/autocast_mode.h>

#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda_layer_norm.hpp"
#endif

namespace shardscope::engine {
namespace {

#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
kernels::Dtype kernel_dtype(torch::ScalarType t) {
  return t == torch::kBFloat16 ? kernels::Dtype::kBFloat16
         : t == torch::kFloat16 ? kernels::Dtype::kFloat16
                                : kernels::Dtype::kFloat32;
}

kernels::LayerNormShape shape_of(const torch::Tensor& x2d, double eps) {
  return {x2d.size(0), x2d.size(1), kernel_dtype(x2d.scalar_type()), static_cast<float>(eps)};
}

class FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x2d,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    const auto shape = shape_of(x2d, eps);
    auto y = torch::empty_like(x2d);
    const auto stats = x2d.options().dtype(torch::kFloat32);
    auto mean = torch::empty({x2d.size(0)}, stats), rstd = torch::empty({x2d.size(0)}, stats);
    kernels::cuda_layer_norm_forward(shape, {x2d.data_ptr(), weight.data_ptr(), bias.data_ptr(), y.data_ptr(),
                                             mean.data_ptr<float>(), rstd.data_ptr<float>()},
                                     c10::cuda::getCurrentCUDAStream(x2d.device().index()).stream());
    ctx->save_for_backward({x2d, weight, mean, rstd});
    ctx->saved_data["eps"] = eps;
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2d = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
    const auto dy = grads[0].contiguous();
    const auto shape = shape_of(x2d, ctx->saved_data["eps"].toDouble());
    auto dx = torch::empty_like(x2d), dweight = torch::empty_like(weight), dbias = torch::empty_like(weight);
    auto workspace = torch::empty({static_cast<std::int64_t>(kernels::cuda_layer_norm_workspace_floats(shape))},
                                  x2d.options().dtype(torch::kFloat32));
    kernels::cuda_layer_norm_backward(shape, {dy.data_ptr(), x2d.data_ptr(), weight.data_ptr(), mean.data_ptr<float>(),
                                              rstd.data_ptr<float>(), dx.data_ptr(), dweight.data_ptr(), dbias.data_ptr()},
                                      workspace.data_ptr<float>(),
                                      c10::cuda::getCurrentCUDAStream(x2d.device().index()).stream());
    return {dx, dweight, dbias, torch::Tensor()};
  }
};

bool fused_fits(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!x.is_cuda() || at::autocast::is_autocast_enabled(at::kCUDA)) return false;
  if (!weight.defined() || !bias.defined() || weight.dim() != 1 || weight.scalar_type() != x.scalar_type() ||
      bias.scalar_type() != x.scalar_type() || !weight.is_contiguous() || !bias.is_contiguous() || x.dim() < 1)
    return false;
  const auto t = x.scalar_type();
  if (t != torch::kBFloat16 && t != torch::kFloat16 && t != torch::kFloat32) return false;
  const void* pointers[] = {x.data_ptr(), weight.data_ptr(), bias.data_ptr()};
  return x.is_contiguous() && x.size(-1) == weight.size(0) &&
         kernels::cuda_layer_norm_fits({1, x.size(-1), kernel_dtype(t), 1e-5f}, pointers, 3);
}
#endif

}  // namespace

torch::Tensor layer_norm(const torch::Tensor& x, const torch::nn::LayerNorm& module) {
#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
  const auto& ln = *module.ptr();
  const auto& o = ln.options;
  if (o.normalized_shape().size() == 1 && o.elementwise_affine() && fused_fits(x, ln.weight, ln.bias)) {
    const auto width = x.size(-1);
    return FusedLayerNorm::apply(x.reshape({-1, width}), ln.weight, ln.bias, o.eps()).view(x.sizes());
  }
#endif
  return module.ptr()->forward(x);
}

}  // namespace shardscope::engine
