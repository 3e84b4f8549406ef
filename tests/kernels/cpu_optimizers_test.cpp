// cpu_lamb, cpu_lion, cpu_adagrad, cpu_sgd: every SIMD level against the scalar reference, and the
// scalar reference against an independent double-precision implementation of the textbook
// formulas (torch.optim's documentation; DeepSpeed FusedLamb's kernel for Lamb).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu_adagrad.hpp"
#include "kernels/cpu_lamb.hpp"
#include "kernels/cpu_lion.hpp"
#include "kernels/cpu_sgd.hpp"
#include "kernels/kernel_error.hpp"
#include "tests/kernels/optimizer_test_driver.hpp"

namespace shardscope::kernels {
namespace {

using testing::OptimizerBuffers;

constexpr std::size_t kSmall = 37;
constexpr int kSteps = 3;

/// Runs `kernel` on float buffers and `textbook` on double copies for kSteps steps, then compares
/// to 1e-6 relative. The absolute floor `abs` covers states that cancel to near zero (m*beta +
/// g*(1-beta)), where float's rounding of the terms is all that is left: 1e-9 for terms of 1e-2,
/// more where the terms are of order 1.
template <class Kernel, class Textbook>
void check_textbook(int state_count, Kernel kernel, Textbook textbook, double abs = 1e-9) {
  OptimizerBuffers b(kSmall, state_count, 11, Dtype::kFloat32, Dtype::kFloat32);
  std::vector<double> p(b.params.begin(), b.params.end());
  std::vector<std::vector<double>> s(state_count, std::vector<double>(kSmall, 0.0));
  for (int step = 1; step <= kSteps; ++step) {
    b.fill_grads(200 + step);
    kernel(b, step);
    textbook(p, s, std::vector<double>(b.grads32.begin(), b.grads32.end()), step);
  }
  testing::expect_all_close(b.params, std::vector<float>(p.begin(), p.end()), 1e-6, "params vs textbook", abs);
  for (int k = 0; k < state_count; ++k)
    testing::expect_all_close(b.states[k], std::vector<float>(s[k].begin(), s[k].end()), 1e-6,
                              "state vs textbook", abs);
}

// ---- Lamb ----

LambState lamb_state(OptimizerBuffers& b) { return {b.states[0].data(), b.states[1].data()}; }

TEST(CpuLamb, MatchesReferenceAtEveryLevel) {
  LambOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.01;
  testing::check_against_reference(
      2, [&](SimdLevel l, OptimizerBuffers& b, std::int64_t t) { cpu_lamb_step(o, b.flat(), lamb_state(b), t, l); },
      [&](OptimizerBuffers& b, std::int64_t t) { cpu_lamb_step_reference(o, b.flat(), lamb_state(b), t); });
}

TEST(CpuLamb, MatchesFusedLambFormula) {
  LambOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.05;
  for (bool inside : {false, true}) {
    o.eps_inside_sqrt = inside;
    check_textbook(
        2, [&](OptimizerBuffers& b, std::int64_t t) { cpu_lamb_step(o, b.flat(), lamb_state(b), t); },
        [&](std::vector<double>& p, auto& s, const std::vector<double>& g, std::int64_t t) {
          // FusedLamb: u = m / (sqrt(v) + eps) + wd * p; p -= lr * sqrt(bc2) / bc1 * clamp(|p|/|u|) * u.
          std::vector<double> u(p.size());
          double w2 = 0, u2 = 0;
          for (std::size_t i = 0; i < p.size(); ++i) {
            s[0][i] = 0.9 * s[0][i] + 0.1 * g[i];
            s[1][i] = 0.999 * s[1][i] + 0.001 * g[i] * g[i];
            const double denom = inside ? std::sqrt(s[1][i] + 1e-8) : std::sqrt(s[1][i]) + 1e-8;
            u[i] = s[0][i] / denom + 0.05 * p[i];
            w2 += p[i] * p[i];
            u2 += u[i] * u[i];
          }
          const double ratio = std::fmin(10.0, std::fmax(0.01, std::sqrt(w2) / std::sqrt(u2)));
          const double step_size = 1e-2 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
          for (std::size_t i = 0; i < p.size(); ++i) p[i] -= step_size * ratio * u[i];
        });
  }
}

TEST(CpuLamb, TrustRatioIsClampedAndOneForZeroNorms) {
  EXPECT_FLOAT_EQ(lamb_trust_ratio(4.0, 1.0, 10.0, 0.01), 2.0f);
  EXPECT_FLOAT_EQ(lamb_trust_ratio(1e6, 1.0, 10.0, 0.01), 10.0f);
  EXPECT_FLOAT_EQ(lamb_trust_ratio(1e-12, 1.0, 10.0, 0.01), 0.01f);
  EXPECT_FLOAT_EQ(lamb_trust_ratio(0.0, 1.0, 10.0, 0.01), 1.0f);
  EXPECT_FLOAT_EQ(lamb_trust_ratio(1.0, 0.0, 10.0, 0.01), 1.0f);
  // Weights at zero: the step is taken with ratio 1 (DeepSpeed's reg_w == 0 case).
  std::vector<float> p(20, 0.0f), g(20, 0.5f), m(20, 0.0f), v(20, 0.0f);
  const LambStepResult r = cpu_lamb_step({}, {p.data(), {g.data(), Dtype::kFloat32}, {}, 20}, {m.data(), v.data()}, 1);
  EXPECT_EQ(r.weight_squared_norm, 0.0);
  EXPECT_EQ(r.trust_ratio, 1.0f);
  EXPECT_LT(p[0], 0.0f);
}

TEST(CpuLamb, RejectsInvertedCoefficientBounds) {
  LambOptions o;
  o.max_coeff = 0.001;
  std::vector<float> p(4), g(4), m(4), v(4);
  EXPECT_THROW(cpu_lamb_step(o, {p.data(), {g.data(), Dtype::kFloat32}, {}, 4}, {m.data(), v.data()}, 1),
               KernelError);
}

// ---- Lion ----

TEST(CpuLion, MatchesReferenceAtEveryLevel) {
  LionOptions o;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  testing::check_against_reference(
      1, [&](SimdLevel l, OptimizerBuffers& b, std::int64_t t) { cpu_lion_step(o, b.flat(), {b.states[0].data()}, t, l); },
      [&](OptimizerBuffers& b, std::int64_t t) { cpu_lion_step_reference(o, b.flat(), {b.states[0].data()}, t); });
}

TEST(CpuLion, MatchesTextbook) {
  LionOptions o;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  check_textbook(
      1, [&](OptimizerBuffers& b, std::int64_t t) { cpu_lion_step(o, b.flat(), {b.states[0].data()}, t); },
      [&](std::vector<double>& p, auto& s, const std::vector<double>& g, std::int64_t) {
        for (std::size_t i = 0; i < p.size(); ++i) {
          const double c = 0.9 * s[0][i] + 0.1 * g[i];
          p[i] = p[i] * (1 - 1e-3 * 0.1) - 1e-3 * ((c > 0) - (c < 0));
          s[0][i] = 0.999 * s[0][i] + 0.001 * g[i];
        }
      });
}

// ---- Adagrad ----

TEST(CpuAdagrad, MatchesReferenceAtEveryLevel) {
  AdagradOptions o;
  o.weight_decay = 0.01;
  o.lr_decay = 0.1;
  testing::check_against_reference(
      1, [&](SimdLevel l, OptimizerBuffers& b, std::int64_t t) { cpu_adagrad_step(o, b.flat(), {b.states[0].data()}, t, l); },
      [&](OptimizerBuffers& b, std::int64_t t) { cpu_adagrad_step_reference(o, b.flat(), {b.states[0].data()}, t); });
}

TEST(CpuAdagrad, MatchesTorchFormula) {
  AdagradOptions o;
  o.weight_decay = 0.01;
  o.lr_decay = 0.1;
  check_textbook(
      1, [&](OptimizerBuffers& b, std::int64_t t) { cpu_adagrad_step(o, b.flat(), {b.states[0].data()}, t); },
      [&](std::vector<double>& p, auto& s, const std::vector<double>& g, std::int64_t t) {
        const double clr = 1e-2 / (1 + (t - 1) * 0.1);
        for (std::size_t i = 0; i < p.size(); ++i) {
          const double gi = g[i] + 0.01 * p[i];
          s[0][i] += gi * gi;
          p[i] -= clr * gi / (std::sqrt(s[0][i]) + 1e-10);
        }
      });
}

// ---- SGD ----

void check_sgd(const SgdOptions& o) {
  testing::check_against_reference(
      1, [&](SimdLevel l, OptimizerBuffers& b, std::int64_t t) { cpu_sgd_step(o, b.flat(), {b.states[0].data()}, t, l); },
      [&](OptimizerBuffers& b, std::int64_t t) { cpu_sgd_step_reference(o, b.flat(), {b.states[0].data()}, t); });
  check_textbook(
      1, [&](OptimizerBuffers& b, std::int64_t t) { cpu_sgd_step(o, b.flat(), {b.states[0].data()}, t); },
      [&](std::vector<double>& p, auto& s, const std::vector<double>& g, std::int64_t t) {
        for (std::size_t i = 0; i < p.size(); ++i) {
          double d = g[i] + o.weight_decay * p[i];
          if (o.momentum != 0) {
            s[0][i] = t == 1 ? d : o.momentum * s[0][i] + (1 - o.dampening) * d;
            d = o.nesterov ? d + o.momentum * s[0][i] : s[0][i];
          }
          p[i] -= o.lr * d;
        }
      },
      // The momentum buffer adds gradients of order 1: four float roundings of 1 (6e-8 each).
      2.5e-7);
}

TEST(CpuSgd, PlainMomentumNesterovAndDampening) {
  SgdOptions o;
  o.lr = 0.05;
  check_sgd(o);  // plain SGD: the state buffer stays untouched
  o.momentum = 0.9;
  o.weight_decay = 1e-3;
  check_sgd(o);
  o.nesterov = true;
  check_sgd(o);
  o.nesterov = false;
  o.dampening = 0.5;
  check_sgd(o);
}

TEST(CpuSgd, NesterovNeedsMomentumAndNoDampening) {
  SgdOptions o;
  o.nesterov = true;
  std::vector<float> p(4), g(4), buf(4);
  FlatParams flat{p.data(), {g.data(), Dtype::kFloat32}, {}, 4};
  EXPECT_THROW(cpu_sgd_step(o, flat, {buf.data()}, 1), KernelError);
  o.momentum = 0.9;
  o.dampening = 0.1;
  EXPECT_THROW(cpu_sgd_step(o, flat, {buf.data()}, 1), KernelError);
  o.dampening = 0.0;
  EXPECT_NO_THROW(cpu_sgd_step(o, flat, {buf.data()}, 1));
  EXPECT_THROW(cpu_sgd_step(o, flat, {nullptr}, 1), KernelError);  // momentum needs its buffer
  o = SgdOptions{};
  EXPECT_NO_THROW(cpu_sgd_step(o, flat, {nullptr}, 1));  // plain SGD does not
}

}  // namespace
}  // namespace shardscope::kernels
