// The device-generic path of apply_optimizer_step (flat_optimizer_internal.hpp): the same updates as the kernels, written as tensor
// operations. It runs on CUDA buffers (one launch per operation rather than one fused kernel)
// and is the independent reference the engine tests compare the CPU kernels with.
#include <algorithm>
#include <cmath>

#include "engine/flat_optimizer_internal.hpp"

namespace shardscope::engine {

void step_tensor_ops(const OptimizerSettings& settings, const OptimizerBuffers& b, const GradientPieces& grads,
                     const StepArgs& args) {
  torch::NoGradGuard no_grad;
  const double lr = args.lr, beta1 = args.beta1, beta2 = args.beta2;
  const std::int64_t step = args.step;
  const double t = static_cast<double>(step);
  const double wd = settings.weight_decay;
  const double bc1 = settings.bias_correction ? 1 - std::pow(beta1, t) : 1.0;
  const double bc2 = settings.bias_correction ? 1 - std::pow(beta2, t) : 1.0;
  const auto state = [&b](const char* name, std::int64_t offset, std::int64_t numel) {
    return b.state.at(name).narrow(0, offset, numel);
  };
  // Elementwise updates, one gradient piece (and the master and state elements it covers) at a time.
  for (const auto& piece : grads) {
    const std::int64_t at = piece.offset, n = piece.grads.numel();
    torch::Tensor g = piece.grads.to(torch::kFloat32);
    if (args.grad_scale != 1.0f) g = g * args.grad_scale;  // fp32 times the fp32 factor, as the kernels
    auto w = b.master.narrow(0, at, n);
    switch (settings.algorithm) {
      case OptimizerAlgorithm::kAdam:
      case OptimizerAlgorithm::kAdamW: {
        auto m = state("exp_avg", at, n);
        auto v = state("exp_avg_sq", at, n);
        const bool decoupled = settings.algorithm == OptimizerAlgorithm::kAdamW;
        torch::Tensor grad = (!decoupled && wd != 0) ? g + wd * w : g;
        m.mul_(beta1).add_(grad, 1 - beta1);
        v.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        if (decoupled && wd != 0) w.mul_(1 - lr * wd);
        const torch::Tensor denom = (v / bc2).sqrt_().add_(settings.eps);
        w.addcdiv_(m, denom, -lr / bc1);
        break;
      }
      case OptimizerAlgorithm::kLamb: {  // the moments here; the per-tensor update below
        state("exp_avg", at, n).mul_(beta1).add_(g, 1 - beta1);
        state("exp_avg_sq", at, n).mul_(beta2).addcmul_(g, g, 1 - beta2);
        break;
      }
      case OptimizerAlgorithm::kLion: {
        auto m = state("exp_avg", at, n);
        const torch::Tensor update = (m * beta1 + g * (1 - beta1)).sign_();
        if (wd != 0) w.mul_(1 - lr * wd);
        w.add_(update, -lr);
        m.mul_(beta2).add_(g, 1 - beta2);
        break;
      }
      case OptimizerAlgorithm::kAdagrad: {
        auto sum = state("sum", at, n);
        torch::Tensor grad = wd != 0 ? g + wd * w : g;
        const double clr = lr / (1 + (t - 1) * settings.lr_decay);
        sum.addcmul_(grad, grad, 1.0);
        w.addcdiv_(grad, sum.sqrt().add_(settings.eps), -clr);
        break;
      }
      case OptimizerAlgorithm::kSgd: {
        torch::Tensor grad = wd != 0 ? g + wd * w : g;
        if (settings.momentum > 0) {
          auto buf = state("momentum_buffer", at, n);
          if (step == 1)
            buf.copy_(grad);
          else
            buf.mul_(settings.momentum).add_(grad, 1 - settings.dampening);
          grad = settings.nesterov ? grad + settings.momentum * buf : buf;
        }
        w.add_(grad, -lr);
        break;
      }
    }
  }
  if (settings.algorithm == OptimizerAlgorithm::kLamb) {
    // FusedLamb: the bias corrections fold into the step size; the update (with weight decay)
    // is scaled per tensor by the trust ratio ||w|| / ||update|| clamped to [min, max]_coeff.
    const double step_size = lr * std::sqrt(bc2) / bc1;
    for (const auto& seg : b.segments) {
      gradient_piece_holding(grads, seg);  // a tensor split across pieces has no trust ratio
      auto w = b.master.narrow(0, seg.offset, seg.numel);
      auto update = state("exp_avg", seg.offset, seg.numel) /
                    (state("exp_avg_sq", seg.offset, seg.numel).sqrt() + settings.eps);
      if (wd != 0) update = update + wd * w;
      const double w_norm = w.norm().item<double>(), u_norm = update.norm().item<double>();
      double ratio = 1.0;
      if (w_norm > 0 && u_norm > 0) ratio = std::min(std::max(w_norm / u_norm, settings.min_coeff), settings.max_coeff);
      w.add_(update, -step_size * ratio);
    }
  }
  if (b.model_copy.defined()) b.model_copy.copy_(b.master);
}

}  // namespace shardscope::engine
