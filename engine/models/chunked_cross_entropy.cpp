#include "engine/models/chunked_cross_entropy.hpp"

#include <algorithm>

#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda_cross_entropy.hpp"
#endif

namespace shardscope::engine {
namespace {

// 128 MiB of fp32 per block by default: small beside the logits, large enough that each block is
// a few big kernels.
std::int64_t rows_per_block(std::int64_t block_elements, std::int64_t vocab) {
  return std::max<std::int64_t>(1, block_elements / std::max<std::int64_t>(1, vocab));
}

class ChunkedCrossEntropy : public torch::autograd::Function<ChunkedCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, std::int64_t ignore_index, std::int64_t block_elements) {
    const auto rows = logits.size(0), block = rows_per_block(block_elements, logits.size(1));
    auto lse = torch::empty({rows}, logits.options().dtype(torch::kFloat32));
    for (std::int64_t r = 0; r < rows; r += block) {
      const auto n = std::min(block, rows - r);
      lse.narrow(0, r, n).copy_(torch::logsumexp(logits.narrow(0, r, n).to(torch::kFloat32), {1}));
    }
    const auto counted = targets != ignore_index;
    const auto ids = targets.masked_fill(counted.logical_not(), 0).unsqueeze(1);
    const auto picked = logits.gather(1, ids).squeeze(1).to(torch::kFloat32);
    const auto weight = counted.to(torch::kFloat32);
    const auto count = weight.sum();  // stays on the device: no wait for the host here
    ctx->save_for_backward({logits, ids, weight, lse, count});
    ctx->saved_data["block_elements"] = block_elements;
    return ((lse - picked) * weight).sum() / count;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &ids = saved[1], &weight = saved[2], &lse = saved[3], &count = saved[4];
    // d loss / d logit[i, j] = (softmax(logits[i])[j] - [j == target_i]) * weight_i * grad / count
    const auto row_scale = weight * (grad_outputs[0].to(torch::kFloat32) / count);
    auto grad = torch::empty_like(logits);
    const auto rows = logits.size(0);
    const auto block = rows_per_block(ctx->saved_data["block_elements"].toInt(), logits.size(1));
    for (std::int64_t r = 0; r < rows; r += block) {
      const auto n = std::min(block, rows - r);
      auto p = logits.narrow(0, r, n).to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
      p.sub_(lse.narrow(0, r, n).unsqueeze(1)).exp_();
      p.scatter_add_(1, ids.narrow(0, r, n), -torch::ones({n, 1}, p.options()));
      p.mul_(row_scale.narrow(0, r, n).unsqueeze(1));
      grad.narrow(0, r, n).copy_(p);
    }
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
kernels::CrossEntropyRows kernel_rows(const torch::Tensor& logits, const torch::Tensor& targets,
                                      std::int64_t ignore_index) {
  kernels::CrossEntropyRows rows;
  rows.logits = logits.data_ptr();
  rows.dtype = logits.scalar_type() == torch::kBFloat16 ? kernels::Dtype::kBFloat16
               : logits.scalar_type() == torch::kFloat16 ? kernels::Dtype::kFloat16
                                                         : kernels::Dtype::kFloat32;
  rows.rows = logits.size(0);
  rows.vocab = logits.size(1);
  rows.row_stride = logits.stride(0);
  rows.targets = targets.data_ptr<std::int64_t>();
  rows.ignore_index = ignore_index;
  return rows;
}

// On a GPU: kernels/cuda_cross_entropy's two passes over the logits, 2 + 4 bytes per logit, no
// fp32 temporary at all; with `in_place` the gradient overwrites the saved logits.
class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, std::int64_t ignore_index, bool in_place) {
    const auto stream = c10::cuda::getCurrentCUDAStream(logits.device().index()).stream();
    auto lse = torch::empty({logits.size(0)}, logits.options().dtype(torch::kFloat32));
    auto row_loss = torch::empty_like(lse);
    kernels::cuda_cross_entropy_forward(kernel_rows(logits, targets, ignore_index), lse.data_ptr<float>(),
                                        row_loss.data_ptr<float>(), stream);
    const auto count = (targets != ignore_index).sum().to(torch::kFloat32);  // on the device: no wait
    ctx->save_for_backward({logits, targets, lse, count});
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["in_place"] = in_place;
    return row_loss.sum() / count;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &targets = saved[1], &lse = saved[2], &count = saved[3];
    const auto scale = (grad_outputs[0].to(torch::kFloat32) / count).contiguous();
    auto grad = ctx->saved_data["in_place"].toBool() ? logits : torch::empty_like(logits);
    const auto stream = c10::cuda::getCurrentCUDAStream(logits.device().index()).stream();
    kernels::cuda_cross_entropy_backward(kernel_rows(logits, targets, ctx->saved_data["ignore_index"].toInt()),
                                         lse.data_ptr<float>(), scale.data_ptr<float>(),
                                         {grad.data_ptr(), grad.stride(0)}, stream);
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};
#endif

}  // namespace

torch::Tensor chunked_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                    std::int64_t ignore_index, std::int64_t block_elements) {
  return cross_entropy_loss(logits, targets, {ignore_index, block_elements, /*gradient_over_logits=*/false});
}

torch::Tensor cross_entropy_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                 const CrossEntropyOptions& options) {
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "cross-entropy: logits must be [N, V] and targets [N], got ", logits.sizes(), " and ", targets.sizes());
  TORCH_CHECK(logits.is_floating_point(), "cross-entropy: logits must be floating point, got ", logits.scalar_type());
  const auto ids = targets.to(torch::kLong);
#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
  const auto t = logits.scalar_type();
  if (logits.is_cuda() && logits.stride(1) == 1 && options.fused_on_gpu &&
      (t == torch::kBFloat16 || t == torch::kFloat16 || t == torch::kFloat32))
    return FusedCrossEntropy::apply(logits, ids.to(logits.device()).contiguous(), options.ignore_index,
                                    options.gradient_over_logits);
#endif
  return ChunkedCrossEntropy::apply(logits, ids, options.ignore_index, options.block_elements);
}

}  // namespace shardscope::engine
