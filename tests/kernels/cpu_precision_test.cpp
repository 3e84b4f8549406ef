// cpu_norm and cpu_unscale: sums against a plain double loop, bitwise determinism across OpenMP
// thread counts and SIMD levels, clipping, and the inf/NaN check wherever the bad value sits.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <limits>

#include "kernels/cpu_norm.hpp"
#include "kernels/cpu_unscale.hpp"
#include "kernels/kernel_error.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace shardscope::kernels {
namespace {

using testing::kSizes;
using testing::random_floats;

TEST(CpuNorm, MatchesPlainDoubleSum) {
  for (SimdLevel level : available_simd_levels()) {
    for (std::size_t n : kSizes) {
      const auto x = random_floats(n, 5, -3.0f, 3.0f);
      const double expected = cpu_squared_l2_norm_reference(x.data(), n);
      EXPECT_NEAR(cpu_squared_l2_norm(x.data(), n, level), expected, 1e-12 * expected)
          << simd_level_name(level) << " n=" << n;
    }
  }
  const std::vector<float> ones(1000, 2.0f);
  EXPECT_EQ(cpu_squared_l2_norm(ones.data(), ones.size()), 4000.0);  // exact: small integers
}

TEST(CpuNorm, SameBitsForEveryThreadCountAndLevel) {
  // Values spanning many magnitudes so that a different summation order would show.
  auto x = random_floats(1'000'003, 9, -1.0f, 1.0f);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] *= 1e4f;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const double baseline = cpu_squared_l2_norm(x.data(), x.size(), SimdLevel::kScalar);
  for (int threads : {1, 2, 3, 4, 7}) {
    omp_set_num_threads(threads);
    for (SimdLevel level : available_simd_levels())
      EXPECT_EQ(cpu_squared_l2_norm(x.data(), x.size(), level), baseline)
          << threads << " threads, " << simd_level_name(level);
  }
  omp_set_num_threads(saved);
  const double plain = cpu_squared_l2_norm_reference(x.data(), x.size());
  EXPECT_NEAR(baseline, plain, 1e-12 * plain);
}

TEST(CpuNorm, ClipCoefficientAndScaling) {
  EXPECT_DOUBLE_EQ(clip_coefficient(0.5, 1.0), 1.0);           // below the threshold: no scaling
  EXPECT_NEAR(clip_coefficient(4.0, 1.0), 1.0 / (4.0 + 1e-6), 1e-15);
  EXPECT_THROW(clip_coefficient(1.0, 0.0), KernelError);
  for (SimdLevel level : available_simd_levels()) {
    for (std::size_t n : kSizes) {
      auto x = random_floats(n, 3, -2.0f, 2.0f);
      const auto original = x;
      const double norm = std::sqrt(cpu_squared_l2_norm(x.data(), n, level));
      const float factor = static_cast<float>(clip_coefficient(norm, 0.5));
      cpu_scale(x.data(), n, factor, level);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], original[i] * factor) << i;
      if (n >= 16) {
        EXPECT_NEAR(std::sqrt(cpu_squared_l2_norm(x.data(), n, level)), 0.5, 1e-5);
      }
    }
  }
}

TEST(CpuUnscale, ScalesAndFindsNothingOnFiniteData) {
  for (SimdLevel level : available_simd_levels()) {
    for (std::size_t n : kSizes) {
      auto a = random_floats(n, 4, -1e4f, 1e4f);
      auto b = a;
      EXPECT_FALSE(cpu_unscale_and_check(a.data(), n, 1.0f / 1024.0f, level));
      EXPECT_FALSE(cpu_unscale_and_check_reference(b.data(), n, 1.0f / 1024.0f));
      testing::expect_all_close(a, b, 1e-6, simd_level_name(level));
      EXPECT_FALSE(cpu_has_nonfinite(a.data(), n, level));
    }
  }
}

TEST(CpuUnscale, FindsInfAndNanAnywhere) {
  const float bad_values[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()};
  const std::size_t n = 100003;
  // First element, inside a vector, last of the vector body, the scalar tail, another chunk.
  const std::size_t positions[] = {0, 5, 16383, 16384 * 6 + 5, n - 1};
  for (SimdLevel level : available_simd_levels()) {
    for (float bad : bad_values) {
      for (std::size_t at : positions) {
        auto x = random_floats(n, 8, -1.0f, 1.0f);
        x[at] = bad;
        EXPECT_TRUE(cpu_has_nonfinite(x.data(), n, level)) << simd_level_name(level) << " at " << at;
        EXPECT_TRUE(cpu_unscale_and_check(x.data(), n, 0.5f, level)) << simd_level_name(level) << " at " << at;
      }
    }
    // A finite value that overflows only after scaling is not an overflow of the gradient.
    std::vector<float> big(9, 3e38f);
    EXPECT_FALSE(cpu_unscale_and_check(big.data(), big.size(), 1.0f, level));
  }
  std::vector<float> x(3, 1.0f);
  EXPECT_THROW(cpu_unscale_and_check(x.data(), 3, std::numeric_limits<float>::infinity()), KernelError);
}

}  // namespace
}  // namespace shardscope::kernels
