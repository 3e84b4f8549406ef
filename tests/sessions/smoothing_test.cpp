#include "sessions/smoothing.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

// Reference: the debiased EMA is the weighted mean sum_k w^(n-k) y_k / sum_k w^(n-k) (the (1-w)
// factors cancel against 1 - w^n), written here directly rather than recursively.
double weighted_mean(const std::vector<double>& y, std::size_t n, double w) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k <= n; ++k) {
    num += std::pow(w, static_cast<double>(n - k)) * y[k];
    den += std::pow(w, static_cast<double>(n - k));
  }
  return num / den;
}

TEST(Smoothing, EmaIsTensorBoardsDebiasedAverage) {
  const std::vector<double> x{0, 1, 2, 3, 4};
  const std::vector<double> y{1, 5, 2, 8, 3};
  Smoothing s;
  s.kind = SmoothingKind::kEma;
  s.weight = 0.6;
  const auto out = smooth(x, y, s);
  EXPECT_DOUBLE_EQ(out[0], 1.0);  // the first point is never pulled towards zero
  for (std::size_t n = 0; n < y.size(); ++n) EXPECT_NEAR(out[n], weighted_mean(y, n, 0.6), 1e-12) << n;
  // By hand: (0.6 * 1 * 0.4 + 0.4 * 5) / (1 - 0.36) = 2.24 / 0.64 = 3.5
  EXPECT_NEAR(out[1], 3.5, 1e-12);
}

TEST(Smoothing, TwemaMatchesWandbsFormula) {
  // Evenly spaced points: every decay is sqrt(0.81)^(1000 / 4) = 0.9^250 per step.
  const std::vector<double> x{0, 10, 20, 30, 40};
  const std::vector<double> y{1, 5, 2, 8, 3};
  Smoothing s;
  s.kind = SmoothingKind::kTimeWeightedEma;
  s.weight = 0.81;
  s.viewport_scale = 4;  // small scale so the decay per step is 0.9^1 and visible
  const auto out = smooth(x, y, s);
  for (std::size_t n = 0; n < y.size(); ++n) EXPECT_NEAR(out[n], weighted_mean(y, n, 0.9), 1e-12) << n;
  // Uneven spacing: a point twice as far away decays twice as much (0.9^2).
  const std::vector<double> x2{0, 1, 3};
  const std::vector<double> y2{2, 4, 6};
  s.viewport_scale = 3;  // range 3 -> one x unit is one decay unit
  const auto out2 = smooth(x2, y2, s);
  const double expected = (6 + 4 * 0.81 + 2 * 0.81 * 0.9) / (1 + 0.81 + 0.81 * 0.9);
  EXPECT_NEAR(out2[2], expected, 1e-12);
}

TEST(Smoothing, NanPointsStayNanAndDoNotDisturbTheAverage) {
  const std::vector<double> x{0, 1, 2};
  const std::vector<double> y{1, NAN, 5};
  Smoothing s;
  s.kind = SmoothingKind::kEma;
  s.weight = 0.5;
  const auto out = smooth(x, y, s);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_NEAR(out[2], (0.5 * 1 + 5) / 1.5, 1e-12);
}

TEST(Smoothing, RunningAverageIsACentredWindow) {
  Smoothing s;
  s.kind = SmoothingKind::kRunningAverage;
  s.window = 3;
  const auto out = smooth({0, 1, 2, 3}, {3, 6, 9, 12}, s);
  EXPECT_DOUBLE_EQ(out[0], 4.5);  // (3 + 6) / 2 at the edge
  EXPECT_DOUBLE_EQ(out[1], 6.0);
  EXPECT_DOUBLE_EQ(out[3], 10.5);
}

TEST(Smoothing, RejectsBadParameters) {
  Smoothing s;
  s.kind = SmoothingKind::kEma;
  s.weight = 1.0;
  EXPECT_THROW(smooth({0}, {1}, s), SessionsError);
  s.weight = 0.5;
  EXPECT_THROW(smooth({0, 1}, {1}, s), SessionsError);
  EXPECT_EQ(smoothing_kind_from_name("twema"), SmoothingKind::kTimeWeightedEma);
  EXPECT_THROW(smoothing_kind_from_name("gauss"), SessionsError);
}

}  // namespace
}  // namespace shardscope::sessions
