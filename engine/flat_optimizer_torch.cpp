// The device-generic path of FlatOptimizer: the same updates as the kernels, written as tensor
// operations. It runs on CUDA buffers (one launch per operation rather than one fused kernel)
// and is the independent reference the engine tests compare the CPU kernels with.
#include <cmath>

#include "engine/flat_optimizer.hpp"

namespace shardscope::engine {

void FlatOptimizer::step_torch(double lr, double beta1, double beta2) {
  torch::NoGradGuard no_grad;
  const torch::Tensor g = grads_.scalar_type() == torch::kFloat32 ? grads_ : grads_.to(torch::kFloat32);
  const double t = static_cast<double>(step_count_);
  const double wd = settings_.weight_decay;
  switch (settings_.algorithm) {
    case OptimizerAlgorithm::kAdam:
    case OptimizerAlgorithm::kAdamW: {
      auto& m = state_["exp_avg"];
      auto& v = state_["exp_avg_sq"];
      const bool decoupled = settings_.algorithm == OptimizerAlgorithm::kAdamW;
      torch::Tensor grad = (!decoupled && wd != 0) ? g + wd * master_ : g;
      m.mul_(beta1).add_(grad, 1 - beta1);
      v.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const double bc1 = settings_.bias_correction ? 1 - std::pow(beta1, t) : 1.0;
      const double bc2 = settings_.bias_correction ? 1 - std::pow(beta2, t) : 1.0;
      if (decoupled && wd != 0) master_.mul_(1 - lr * wd);
      const torch::Tensor denom = (v / bc2).sqrt_().add_(settings_.eps);
      master_.addcdiv_(m, denom, -lr / bc1);
      break;
    }
    case OptimizerAlgorithm::kLamb: {
      // FusedLamb: the bias corrections fold into the step size; the update (with weight decay)
      // is scaled per tensor by the trust ratio ||w|| / ||update|| clamped to [min, max]_coeff.
      auto& m = state_["exp_avg"];
      auto& v = state_["exp_avg_sq"];
      m.mul_(beta1).add_(g, 1 - beta1);
      v.mul_(beta2).addcmul_(g, g, 1 - beta2);
      const double bc1 = settings_.bias_correction ? 1 - std::pow(beta1, t) : 1.0;
      const double bc2 = settings_.bias_correction ? 1 - std::pow(beta2, t) : 1.0;
      const double step_size = lr * std::sqrt(bc2) / bc1;
      for (const auto& seg : segments_) {
        auto w = master_.narrow(0, seg.offset, seg.numel);
        auto update = m.narrow(0, seg.offset, seg.numel) / (v.narrow(0, seg.offset, seg.numel).sqrt() + settings_.eps);
        if (wd != 0) update = update + wd * w;
        const double w_norm = w.norm().item<double>(), u_norm = update.norm().item<double>();
        double ratio = 1.0;
        if (w_norm > 0 && u_norm > 0)
          ratio = std::min(std::max(w_norm / u_norm, settings_.min_coeff), settings_.max_coeff);
        w.add_(update, -step_size * ratio);
      }
      break;
    }
    case OptimizerAlgorithm::kLion: {
      auto& m = state_["exp_avg"];
      const torch::Tensor update = (m * beta1 + g * (1 - beta1)).sign_();
      if (wd != 0) master_.mul_(1 - lr * wd);
      master_.add_(update, -lr);
      m.mul_(beta2).add_(g, 1 - beta2);
      break;
    }
    case OptimizerAlgorithm::kAdagrad: {
      auto& sum = state_["sum"];
      torch::Tensor grad = wd != 0 ? g + wd * master_ : g;
      const double clr = lr / (1 + (t - 1) * settings_.lr_decay);
      sum.addcmul_(grad, grad, 1.0);
      master_.addcdiv_(grad, sum.sqrt().add_(settings_.eps), -clr);
      break;
    }
    case OptimizerAlgorithm::kSgd: {
      torch::Tensor grad = wd != 0 ? g + wd * master_ : g;
      if (settings_.momentum > 0) {
        auto& buf = state_["momentum_buffer"];
        if (step_count_ == 1)
          buf.copy_(grad);
        else
          buf.mul_(settings_.momentum).add_(grad, 1 - settings_.dampening);
        grad = settings_.nesterov ? grad + settings_.momentum * buf : buf;
      }
      master_.add_(grad, -lr);
      break;
    }
  }
  if (model_copy_.defined()) model_copy_.copy_(master_);
}

}  // namespace shardscope::engine
