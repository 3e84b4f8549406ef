// cpu_adam: every SIMD level against the scalar reference, the reference against a hand-computed
// two-step example in both modes, and the precondition errors.
#include "kernels/cpu_adam.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernel_error.hpp"
#include "tests/kernels/optimizer_test_driver.hpp"

namespace shardscope::kernels {
namespace {

using testing::OptimizerBuffers;

AdamState adam_state(OptimizerBuffers& b) { return {b.states[0].data(), b.states[1].data()}; }

void check_modes(const AdamOptions& options) {
  testing::check_against_reference(
      2,
      [&](SimdLevel level, OptimizerBuffers& b, std::int64_t step) {
        cpu_adam_step(options, b.flat(), adam_state(b), step, level);
      },
      [&](OptimizerBuffers& b, std::int64_t step) {
        cpu_adam_step_reference(options, b.flat(), adam_state(b), step);
      });
}

TEST(CpuAdam, AdamWMatchesReference) {
  AdamOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.01;
  check_modes(o);
}

TEST(CpuAdam, AdamL2ModeMatchesReference) {
  AdamOptions o;
  o.adam_w_mode = false;
  o.weight_decay = 0.1;
  check_modes(o);
}

TEST(CpuAdam, NoBiasCorrectionNoDecayMatchesReference) {
  AdamOptions o;
  o.bias_correction = false;
  o.beta1 = 0.8;
  o.beta2 = 0.99;
  check_modes(o);
}

// One weight p0 = 1, gradients 0.5 then -0.25, lr 0.1, betas (0.9, 0.999), eps 1e-8.
// AdamW, weight_decay 0.01 (torch.optim.AdamW's formula, worked by hand):
//   t=1: m = 0.05, v = 0.00025, m^ = 0.5, v^ = 0.25, p = 1*(1 - 0.001) - 0.1*0.5/(0.5 + 1e-8) = 0.899000002
//   t=2: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
//        m^ = 0.02/0.19, v^ = 0.00031225/0.001999, p = 0.899000002*0.999 - 0.1*m^/(sqrt(v^) + eps) = 0.8714672987
// Adam (L2 in the gradient), weight_decay 0.1:
//   t=1: g = 0.5 + 0.1*1 = 0.6, m = 0.06, v = 0.00036, p = 1 - 0.1*0.6/(0.6 + 1e-8) = 0.9000000017
//   t=2: g = -0.25 + 0.1*0.9 = -0.16, m = 0.054 - 0.016 = 0.038, v = 0.00035964 + 0.0000256 = 0.00038524,
//        p = 0.9 - 0.1*(0.038/0.19)/(sqrt(0.00038524/0.001999) + eps) = 0.8544413675
struct HandExample {
  bool adam_w_mode;
  double weight_decay;
  double p[2], m[2], v[2];
};

TEST(CpuAdam, TwoStepsMatchHandComputation) {
  const HandExample examples[] = {
      {true, 0.01, {0.899000002, 0.8714672987058463}, {0.05, 0.02}, {0.00025, 0.00031225}},
      {false, 0.1, {0.9000000016666666, 0.8544413674617625}, {0.06, 0.038}, {0.00036, 0.00038524}},
  };
  for (const HandExample& ex : examples) {
    for (SimdLevel level : available_simd_levels()) {
      AdamOptions o;
      o.lr = 0.1;
      o.adam_w_mode = ex.adam_w_mode;
      o.weight_decay = ex.weight_decay;
      // 17 copies of the same weight: the vector body and the scalar tail both see it.
      std::vector<float> p(17, 1.0f), g(17), m(17, 0.0f), v(17, 0.0f);
      FlatParams flat{p.data(), {g.data(), Dtype::kFloat32}, {}, p.size()};
      const float grads[2] = {0.5f, -0.25f};
      for (int t = 0; t < 2; ++t) {
        std::fill(g.begin(), g.end(), grads[t]);
        cpu_adam_step(o, flat, {m.data(), v.data()}, t + 1, level);
        for (std::size_t i = 0; i < p.size(); ++i) {
          EXPECT_NEAR(p[i], ex.p[t], 1e-6 * ex.p[t]) << simd_level_name(level) << " t=" << t + 1;
          EXPECT_NEAR(m[i], ex.m[t], 1e-6 * ex.m[t]) << simd_level_name(level) << " t=" << t + 1;
          EXPECT_NEAR(v[i], ex.v[t], 1e-6 * ex.v[t]) << simd_level_name(level) << " t=" << t + 1;
        }
      }
    }
  }
}

TEST(CpuAdam, EveryLevelGivesTheReferenceBits) {
  AdamOptions o;
  o.weight_decay = 0.01;
  for (SimdLevel level : available_simd_levels()) {
    OptimizerBuffers a(4099, 2, 3, Dtype::kBFloat16, Dtype::kBFloat16);
    OptimizerBuffers b(4099, 2, 3, Dtype::kBFloat16, Dtype::kBFloat16);
    for (int step = 1; step <= 4; ++step) {
      a.fill_grads(step);
      b.fill_grads(step);
      cpu_adam_step(o, a.flat(), adam_state(a), step, level);
      cpu_adam_step_reference(o, b.flat(), adam_state(b), step);
    }
    EXPECT_EQ(a.params, b.params) << simd_level_name(level);
    EXPECT_EQ(a.states, b.states) << simd_level_name(level);
  }
}

// grads.scale (the engine's unscale and clip factor) multiplies each gradient as it is read: the
// same bits as gradients multiplied by it in fp32 beforehand, at every level and gradient dtype.
TEST(CpuAdam, GradientScaleEqualsPrescaledFp32Gradients) {
  AdamOptions o;
  o.weight_decay = 0.01;
  const float scale = 0.37f;
  for (SimdLevel level : available_simd_levels()) {
    for (Dtype grads : {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kFloat16}) {
      OptimizerBuffers a(4099, 2, 3, grads, Dtype::kBFloat16), b(4099, 2, 3, Dtype::kFloat32, Dtype::kBFloat16);
      for (int step = 1; step <= 3; ++step) {
        a.fill_grads(step);
        for (std::size_t i = 0; i < a.grads32.size(); ++i) b.grads32[i] = a.grads32[i] * scale;  // widened, then scaled
        FlatParams scaled = a.flat();
        scaled.grads.scale = scale;
        cpu_adam_step(o, scaled, adam_state(a), step, level);
        cpu_adam_step(o, b.flat(), adam_state(b), step, level);
      }
      EXPECT_EQ(a.params, b.params) << simd_level_name(level) << " " << dtype_name(grads);
      EXPECT_EQ(a.states, b.states) << simd_level_name(level) << " " << dtype_name(grads);
    }
  }
  std::vector<float> p(4), g(4), m(4), v(4);
  FlatParams nan_scale{p.data(), {g.data(), Dtype::kFloat32, NAN}, {}, p.size()};
  EXPECT_THROW(cpu_adam_step({}, nan_scale, {m.data(), v.data()}, 1), KernelError);
}

TEST(CpuAdam, RejectsBadArguments) {
  std::vector<float> p(4), g(4), m(4), v(4);
  FlatParams flat{p.data(), {g.data(), Dtype::kFloat32}, {}, p.size()};
  EXPECT_THROW(cpu_adam_step({}, flat, {m.data(), nullptr}, 1), KernelError);
  EXPECT_THROW(cpu_adam_step({}, flat, {m.data(), v.data()}, 0), KernelError);
  FlatParams no_grads = flat;
  no_grads.grads.data = nullptr;
  EXPECT_THROW(cpu_adam_step({}, no_grads, {m.data(), v.data()}, 1), KernelError);
  FlatParams fp32_copy = flat;
  fp32_copy.copy = {p.data(), Dtype::kFloat32};
  EXPECT_THROW(cpu_adam_step({}, fp32_copy, {m.data(), v.data()}, 1), KernelError);
  AdamOptions bad;
  bad.beta2 = 1.0;
  try {
    cpu_adam_step(bad, flat, {m.data(), v.data()}, 1);
    FAIL() << "beta2 = 1 was accepted";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("beta2"), std::string::npos) << e.what();
  }
  // Empty buffers are a no-op, null pointers included.
  EXPECT_NO_THROW(cpu_adam_step({}, FlatParams{}, {}, 1));
}

}  // namespace
}  // namespace shardscope::kernels
