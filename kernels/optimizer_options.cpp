#include "kernels/optimizer_options.hpp"

#include <cmath>
#include <string>

#include "kernels/flat_params.hpp"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

void require(bool ok, const char* optimizer, const char* option, double value, const char* range) {
  if (ok) return;
  throw KernelError(std::string(optimizer) + ": " + option + " is " + std::to_string(value) +
                    "; it must be " + range);
}

void check_beta(const char* optimizer, const char* name, double beta) {
  require(beta >= 0.0 && beta < 1.0, optimizer, name, beta, "in [0, 1)");
}

void check_common(const char* optimizer, double lr, double weight_decay, std::int64_t step) {
  check_step(step, optimizer);
  require(std::isfinite(lr) && lr >= 0.0, optimizer, "lr", lr, "a finite number >= 0");
  require(std::isfinite(weight_decay) && weight_decay >= 0.0, optimizer, "weight_decay", weight_decay,
          "a finite number >= 0");
}

double one_minus_pow(double beta, std::int64_t step) {
  return 1.0 - std::pow(beta, static_cast<double>(step));
}

float f(double x) { return static_cast<float>(x); }

}  // namespace

AdamCoefficients adam_coefficients(const AdamOptions& o, std::int64_t step) {
  check_common("adam", o.lr, o.weight_decay, step);
  check_beta("adam", "beta1", o.beta1);
  check_beta("adam", "beta2", o.beta2);
  require(o.eps >= 0.0, "adam", "eps", o.eps, ">= 0");
  const double bc1 = o.bias_correction ? one_minus_pow(o.beta1, step) : 1.0;
  const double bc2 = o.bias_correction ? one_minus_pow(o.beta2, step) : 1.0;
  AdamCoefficients c{};
  c.beta1 = f(o.beta1);
  c.one_minus_beta1 = f(1.0 - o.beta1);
  c.beta2 = f(o.beta2);
  c.one_minus_beta2 = f(1.0 - o.beta2);
  c.eps = f(o.eps);
  c.step_size = f(-o.lr / bc1);
  c.bias_correction2_rsqrt = f(1.0 / std::sqrt(bc2));
  c.l2_decay = o.adam_w_mode ? 0.0f : f(o.weight_decay);
  c.decoupled_decay = o.adam_w_mode ? f(-o.lr * o.weight_decay) : 0.0f;
  return c;
}

LambCoefficients lamb_coefficients(const LambOptions& o, std::int64_t step) {
  check_common("lamb", o.lr, o.weight_decay, step);
  check_beta("lamb", "beta1", o.beta1);
  check_beta("lamb", "beta2", o.beta2);
  require(o.eps >= 0.0, "lamb", "eps", o.eps, ">= 0");
  require(o.min_coeff >= 0.0, "lamb", "min_coeff", o.min_coeff, ">= 0");
  require(o.max_coeff >= o.min_coeff, "lamb", "max_coeff", o.max_coeff, ">= min_coeff");
  const double bc1 = o.bias_correction ? one_minus_pow(o.beta1, step) : 1.0;
  const double bc2 = o.bias_correction ? one_minus_pow(o.beta2, step) : 1.0;
  LambCoefficients c{};
  c.beta1 = f(o.beta1);
  c.one_minus_beta1 = f(1.0 - o.beta1);
  c.beta2 = f(o.beta2);
  c.one_minus_beta2 = f(1.0 - o.beta2);
  c.eps = f(o.eps);
  c.weight_decay = f(o.weight_decay);
  c.step_size = f(o.lr * std::sqrt(bc2) / bc1);
  c.max_coeff = f(o.max_coeff);
  c.min_coeff = f(o.min_coeff);
  c.eps_inside_sqrt = o.eps_inside_sqrt;
  return c;
}

LionCoefficients lion_coefficients(const LionOptions& o, std::int64_t step) {
  check_common("lion", o.lr, o.weight_decay, step);
  check_beta("lion", "beta1", o.beta1);
  check_beta("lion", "beta2", o.beta2);
  return {f(o.beta1), f(1.0 - o.beta1), f(o.beta2), f(1.0 - o.beta2), f(-o.lr), f(1.0 - o.lr * o.weight_decay)};
}

AdagradCoefficients adagrad_coefficients(const AdagradOptions& o, std::int64_t step) {
  check_common("adagrad", o.lr, o.weight_decay, step);
  require(o.lr_decay >= 0.0, "adagrad", "lr_decay", o.lr_decay, ">= 0");
  require(o.eps >= 0.0, "adagrad", "eps", o.eps, ">= 0");
  const double clr = o.lr / (1.0 + static_cast<double>(step - 1) * o.lr_decay);
  return {f(-clr), f(o.eps), f(o.weight_decay)};
}

SgdCoefficients sgd_coefficients(const SgdOptions& o, std::int64_t step) {
  check_common("sgd", o.lr, o.weight_decay, step);
  require(o.momentum >= 0.0, "sgd", "momentum", o.momentum, ">= 0");
  require(o.dampening >= 0.0 && o.dampening <= 1.0, "sgd", "dampening", o.dampening, "in [0, 1]");
  if (o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0))
    throw KernelError("sgd: nesterov is set with momentum " + std::to_string(o.momentum) + " and dampening " +
                      std::to_string(o.dampening) +
                      "; Nesterov momentum requires a momentum > 0 and zero dampening (as torch.optim.SGD)");
  return {f(-o.lr), f(o.momentum), f(1.0 - o.dampening), f(o.weight_decay), o.nesterov, step == 1};
}

float lamb_trust_ratio(double w_squared_norm, double u_squared_norm, double max_coeff, double min_coeff) {
  const double w = std::sqrt(w_squared_norm);
  const double u = std::sqrt(u_squared_norm);
  if (w == 0.0 || u == 0.0) return 1.0f;
  double coeff = w / u;
  if (coeff > max_coeff) coeff = max_coeff;
  if (coeff < min_coeff) coeff = min_coeff;
  return f(coeff);
}

}  // namespace shardscope::kernels
