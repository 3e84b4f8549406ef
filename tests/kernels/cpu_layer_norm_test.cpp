// The CPU reference of the fused LayerNorm (kernels/cpu_layer_norm.hpp) against values worked out
// by hand, and its shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu_layer_norm.hpp"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

// Row (1, 2, 3, 6): mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5, x_hat = (x - 3) / sqrt(3.5 + eps).
TEST(CpuLayerNorm, ForwardAndBackwardMatchHandWork) {
  const std::vector<float> x = {1, 2, 3, 6}, weight = {1, 2, 0.5f, -1}, bias = {0, 1, 0, 2};
  std::vector<float> y(4), mean(1), rstd(1);
  const LayerNormShape shape{1, 4, Dtype::kFloat32, 1e-5f};
  cpu_layer_norm_forward(shape, {x.data(), weight.data(), bias.data(), y.data(), mean.data(), rstd.data()});
  const double r = 1.0 / std::sqrt(3.5 + 1e-5);
  EXPECT_NEAR(mean[0], 3.0, 1e-6);
  EXPECT_NEAR(rstd[0], r, 1e-6);
  const double xhat[] = {-2 * r, -1 * r, 0, 3 * r};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(y[j], xhat[j] * weight[j] + bias[j], 1e-6) << j;
  // Backward of loss = sum(y * dy) with dy = (1, 0, 0, 0): g = dy * w = (1, 0, 0, 0),
  // dx_j = r * (g_j - 1/4 - x_hat_j * (x_hat_0 / 4)); dweight = dy * x_hat; dbias = dy.
  const std::vector<float> dy = {1, 0, 0, 0};
  std::vector<float> dx(4), dweight(4), dbias(4);
  cpu_layer_norm_backward(shape, {dy.data(), x.data(), weight.data(), mean.data(), rstd.data(), dx.data(),
                                  dweight.data(), dbias.data()});
  for (int j = 0; j < 4; ++j) {
    const double expected = r * ((j == 0 ? 1.0 : 0.0) - 0.25 - xhat[j] * xhat[0] / 4);
    EXPECT_NEAR(dx[j], expected, 1e-6) << j;
    EXPECT_NEAR(dweight[j], j == 0 ? xhat[0] : 0.0, 1e-6) << j;
    EXPECT_NEAR(dbias[j], j == 0 ? 1.0 : 0.0, 1e-6) << j;
  }
  double sum_dx = 0;
  for (float v : dx) sum_dx += v;
  EXPECT_NEAR(sum_dx, 0.0, 1e-6) << "LayerNorm's input gradient sums to zero over the row";
}

TEST(CpuLayerNorm, RefusesBadShapes) {
  std::vector<float> buffer(8);
  LayerNormForward io{buffer.data(), buffer.data(), buffer.data(), buffer.data(), buffer.data(), buffer.data()};
  EXPECT_THROW(cpu_layer_norm_forward({2, 0, Dtype::kFloat32, 1e-5f}, io), KernelError);
  EXPECT_THROW(cpu_layer_norm_forward({-1, 4, Dtype::kFloat32, 1e-5f}, io), KernelError);
  try {
    cpu_layer_norm_forward({1, 4, Dtype::kFloat32, 0.0f}, io);
    FAIL() << "eps 0 was accepted";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("eps"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::kernels
