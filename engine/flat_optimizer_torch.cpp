// The device-generic path of FlatOptimizer: the same updates as the kernels, written as tensor
// operations. It runs on CUDA buffers (one launch per operation rather than one fused kernel)
// and is the independent reference the engine tests compare the CPU kernels with.
#include <algorithm>
#include <cmath>

#include "engine/flat_optimizer.hpp"

namespace shardscope::engine {

void FlatOptimizer::step_torch(const GradientPieces& grads, double lr, double beta1, double beta2) {
  torch::NoGradGuard no_grad;
  const double t = static_cast<double>(step_count_);
  const double wd = settings_.weight_decay;
  const double bc1 = settings_.bias_correction ? 1 - std::pow(beta1, t) : 1.0;
  const double bc2 = settings_.bias_correction ? 1 - std::pow(beta2, t) : 1.0;
  const auto state = [this](const char* name, std::int64_t offset, std::int64_t numel) {
    return state_.at(name).narrow(0, offset, numel);
  };
  // Elementwise updates, one gradient piece (and the master and state elements it covers) at a time.
  for (const auto& piece : grads) {
    const std::int64_t at = piece.offset, n = piece.grads.numel();
    torch::Tensor g = piece.grads.to(torch::kFloat32);
    if (grad_scale_ != 1.0f) g = g * grad_scale_;  // fp32 times the fp32 factor, as the kernels
    auto w = master_.narrow(0, at, n);
    switch (settings_.algorithm) {
      case OptimizerAlgorithm::kAdam:
      case OptimizerAlgorithm::kAdamW: {
        auto m = state("exp_avg", at, n);
        auto v = state("exp_avg_sq", at, n);
        const bool decoupled = settings_.algorithm == OptimizerAlgorithm::kAdamW;
        torch::Tensor grad = (!decoupled && wd != 0) ? g + wd * w : g;
        m.mul_(beta1).add_(grad, 1 - beta1);
        v.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
        if (decoupled && wd != 0) w.mul_(1 - lr * wd);
        const torch::Tensor denom = (v / bc2).sqrt_().add_(settings_.eps);
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
        const double clr = lr / (1 + (t - 1) * settings_.lr_decay);
        sum.addcmul_(grad, grad, 1.0);
        w.addcdiv_(grad, sum.sqrt().add_(settings_.eps), -clr);
        break;
      }
      case OptimizerAlgorithm::kSgd: {
        torch::Tensor grad = wd != 0 ? g + wd * w : g;
        if (settings_.momentum > 0) {
          auto buf = state("momentum_buffer", at, n);
          if (step_count_ == 1)
            buf.copy_(grad);
          else
            buf.mul_(settings_.momentum).add_(grad, 1 - settings_.dampening);
          grad = settings_.nesterov ? grad + settings_.momentum * buf : buf;
        }
        w.add_(grad, -lr);
        break;
      }
    }
  }
  if (settings_.algorithm == OptimizerAlgorithm::kLamb) {
    // FusedLamb: the bias corrections fold into the step size; the update (with weight decay)
    // is scaled per tensor by the trust ratio ||w|| / ||update|| clamped to [min, max]_coeff.
    const double step_size = lr * std::sqrt(bc2) / bc1;
    for (const auto& seg : segments_) {
      piece_of(grads, seg);  // a tensor split across pieces has no trust ratio
      auto w = master_.narrow(0, seg.offset, seg.numel);
      auto update = state("exp_avg", seg.offset, seg.numel) /
                    (state("exp_avg_sq", seg.offset, seg.numel).sqrt() + settings_.eps);
      if (wd != 0) update = update + wd * w;
      const double w_norm = w.norm().item<double>(), u_norm = update.norm().item<double>();
      double ratio = 1.0;
      if (w_norm > 0 && u_norm > 0) ratio = std::min(std::max(w_norm / u_norm, settings_.min_coeff), settings_.max_coeff);
      w.add_(update, -step_size * ratio);
    }
  }
  if (model_copy_.defined()) model_copy_.copy_(master_);
}

}  // namespace shardscope::engine
