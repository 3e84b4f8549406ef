#pragma once
// The options of every optimizer kernel, with DeepSpeed's parameter names and defaults, and the
// per-step coefficients derived from them. Options are doubles, as the JSON config and Python's
// torch.optim hold them: 1 - beta2 must be float(1 - 0.999), not 1 - float(0.999), which is 1.3e-5
// off and would put every second moment 1.3e-5 away from torch's. CPU and CUDA kernels take the same coefficients, so
// the two back ends apply the same float constants (bias corrections computed once, in double).

#include <cstdint>

namespace shardscope::kernels {

/// FusedAdam / DeepSpeedCPUAdam. adam_w_mode defaults to true: "type": "Adam" runs AdamW unless
/// the config says adam_w_mode: false (engine.py).
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool adam_w_mode = true;
  bool bias_correction = true;
};

/// FusedLamb: eps outside the square root unless eps_inside_sqrt; trust ratio clamped to
/// [min_coeff, max_coeff].
struct LambOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double max_coeff = 10.0;
  double min_coeff = 0.01;
  bool bias_correction = true;
  bool eps_inside_sqrt = false;
};

/// FusedLion / DeepSpeedCPULion.
struct LionOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double weight_decay = 0.0;
};

/// torch.optim.Adagrad (what DeepSpeed runs for "Adagrad" without offload); the accumulator's
/// initial_accumulator_value is the caller's fill of the state buffer.
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double eps = 1e-10;
  double weight_decay = 0.0;
};

/// torch.optim.SGD (DeepSpeed passes "SGD" through to torch).
struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float step_size;               ///< -lr / (1 - beta1^t)
  float bias_correction2_rsqrt;  ///< 1 / sqrt(1 - beta2^t)
  float l2_decay;                ///< weight_decay added to the gradient (Adam mode), else 0
  float decoupled_decay;         ///< -lr * weight_decay applied to the weights (AdamW mode), else 0
};

struct LambCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay;
  float step_size;  ///< lr * sqrt(1 - beta2^t) / (1 - beta1^t), as FusedLamb folds it
  float max_coeff, min_coeff;
  bool eps_inside_sqrt;
};

struct LionCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float neg_lr;        ///< -lr
  float after_decay;   ///< 1 - lr * weight_decay
};

struct AdagradCoefficients {
  float neg_clr;  ///< -lr / (1 + (t - 1) * lr_decay)
  float eps, weight_decay;
};

struct SgdCoefficients {
  float neg_lr, momentum, one_minus_dampening, weight_decay;
  bool nesterov;
  bool first_step;  ///< the momentum buffer starts as a copy of the gradient
};

/// Validates `options` (throws KernelError naming the option and its range) and derives the
/// constants of step `step` (>= 1).
AdamCoefficients adam_coefficients(const AdamOptions& options, std::int64_t step);
/// As adam_coefficients, for Lamb.
LambCoefficients lamb_coefficients(const LambOptions& options, std::int64_t step);
/// As adam_coefficients, for Lion.
LionCoefficients lion_coefficients(const LionOptions& options, std::int64_t step);
/// As adam_coefficients, for Adagrad.
AdagradCoefficients adagrad_coefficients(const AdagradOptions& options, std::int64_t step);
/// As adam_coefficients, for SGD (nesterov needs momentum > 0 and dampening 0, as torch says).
SgdCoefficients sgd_coefficients(const SgdOptions& options, std::int64_t step);

/// DeepSpeed's trust ratio: sqrt(w_sq)/sqrt(u_sq) clamped to [min_coeff, max_coeff], 1 when
/// either norm is zero.
float lamb_trust_ratio(double w_squared_norm, double u_squared_norm, double max_coeff, double min_coeff);

}  // namespace shardscope::kernels
