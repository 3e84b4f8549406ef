// The CPU reference of the fused cross-entropy (kernels/cpu_cross_entropy.hpp) against values
// worked out by hand, in every dtype, with ignored rows, a padded row stride and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu_cross_entropy.hpp"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

// Logits 0, ln 2, ln 3 give exponentials 1, 2, 3: log-sum-exp ln 6, softmax 1/6, 1/3, 1/2.
TEST(CpuCrossEntropy, MatchesHandWorkedRows) {
  const float l2 = std::log(2.0f), l3 = std::log(3.0f);
  // Two rows in a stride of 4 (the fourth slot is padding the kernel must not read as a logit).
  const std::vector<float> logits = {0.0f, l2, l3, 1e30f, l3, 0.0f, l2, -1e30f};
  const std::vector<std::int64_t> targets = {2, 0};
  CrossEntropyRows rows{logits.data(), Dtype::kFloat32, 2, 3, 4, targets.data(), -100};
  std::vector<float> lse(2), loss(2);
  cpu_cross_entropy_forward(rows, lse.data(), loss.data());
  for (int r = 0; r < 2; ++r) EXPECT_NEAR(lse[r], std::log(6.0), 1e-6) << "row " << r;
  EXPECT_NEAR(loss[0], std::log(6.0) - l3, 1e-6);  // -log softmax = -log(1/2)
  EXPECT_NEAR(loss[1], std::log(6.0) - l3, 1e-6);
  std::vector<float> grad(8, 42.0f);
  cpu_cross_entropy_backward(rows, lse.data(), 0.5f, {grad.data(), 4});
  const double expected[] = {1.0 / 6, 1.0 / 3, 0.5 - 1.0, 0.5 - 1.0, 1.0 / 6, 1.0 / 3};
  const int at[] = {0, 1, 2, 4, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(grad[at[i]], 0.5 * expected[i], 1e-6) << "element " << at[i];
  EXPECT_EQ(grad[3], 42.0f) << "the padding of row 0 was written";
  EXPECT_EQ(grad[7], 42.0f) << "the padding of row 1 was written";
}

TEST(CpuCrossEntropy, IgnoredRowsCountNothingAndGetNoGradient) {
  const std::vector<std::uint16_t> logits = {float_to_bf16(1.0f), float_to_bf16(2.0f), float_to_bf16(-1.0f),
                                             float_to_bf16(0.5f)};
  const std::vector<std::int64_t> targets = {-100, 1};
  CrossEntropyRows rows{logits.data(), Dtype::kBFloat16, 2, 2, 2, targets.data(), -100};
  std::vector<float> lse(2), loss(2);
  cpu_cross_entropy_forward(rows, lse.data(), loss.data());
  EXPECT_EQ(loss[0], 0.0f);
  EXPECT_NEAR(lse[0], std::log(std::exp(1.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(loss[1], std::log(std::exp(-1.0) + std::exp(0.5)) - 0.5, 1e-6);
  std::vector<std::uint16_t> grad(4, 0x7fc0);  // NaN: every element must be written
  cpu_cross_entropy_backward(rows, lse.data(), 1.0f, {grad.data(), 2});
  EXPECT_EQ(bf16_to_float(grad[0]), 0.0f);
  EXPECT_EQ(bf16_to_float(grad[1]), 0.0f);
  const double p = std::exp(0.5) / (std::exp(-1.0) + std::exp(0.5));
  EXPECT_NEAR(bf16_to_float(grad[2]), 1.0 - p, 4e-3);  // bf16: 8 bits of mantissa
  EXPECT_NEAR(bf16_to_float(grad[3]), p - 1.0, 4e-3);
}

TEST(CpuCrossEntropy, RefusesBadTargetsAndShapes) {
  const std::vector<float> logits(6, 0.0f);
  std::vector<std::int64_t> targets = {0, 3};
  CrossEntropyRows rows{logits.data(), Dtype::kFloat32, 2, 3, 3, targets.data(), -100};
  std::vector<float> lse(2), loss(2);
  try {
    cpu_cross_entropy_forward(rows, lse.data(), loss.data());
    FAIL() << "a target of 3 in a vocabulary of 3 was accepted";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("target 3 of row 1"), std::string::npos) << e.what();
  }
  targets[1] = 1;
  rows.row_stride = 2;
  EXPECT_THROW(cpu_cross_entropy_forward(rows, lse.data(), loss.data()), KernelError);
  rows.row_stride = 3;
  rows.targets = nullptr;
  EXPECT_THROW(cpu_cross_entropy_forward(rows, lse.data(), loss.data()), KernelError);
}

}  // namespace
}  // namespace shardscope::kernels
