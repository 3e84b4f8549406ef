#include "diagnosis/numerics.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

using sessions::StepMetrics;

std::vector<StepMetrics> smooth_run(int steps, int ranks = 2) {
  std::vector<StepMetrics> out;
  for (int s = 1; s <= steps; ++s)
    for (int r = 0; r < ranks; ++r) {
      StepMetrics m;
      m.rank = r;
      m.step = s;
      m.loss = 3.0 - 0.01 * s + 0.002 * ((s * 7 + r) % 5);  // a gently falling, slightly noisy curve
      m.loss_scale = 65536;
      out.push_back(m);
    }
  return out;
}

TEST(Numerics, ACleanRunHasNoFindings) { EXPECT_TRUE(find_numerics(smooth_run(200)).empty()); }

TEST(Numerics, TheFirstNaNLossIsFoundAtItsStepAndRank) {
  auto steps = smooth_run(60);
  for (auto& m : steps)
    if (m.step >= 37 && m.rank == 1) m.loss = std::numeric_limits<double>::quiet_NaN();
  const auto findings = find_numerics(steps);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "nan_loss");
  EXPECT_EQ(findings[0].first_step, 37);
  EXPECT_EQ(findings[0].last_step, 60);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
}

TEST(Numerics, AnInfLossIsNamedInf) {
  auto steps = smooth_run(10);
  steps[8].loss = std::numeric_limits<double>::infinity();
  const auto findings = find_numerics(steps);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "inf_loss");
  EXPECT_EQ(findings[0].first_step, 5);
}

TEST(Numerics, AnOverflowStreakDownToTheMinimumScaleIsAnError) {
  auto steps = smooth_run(40);
  for (auto& m : steps)
    if (m.step >= 20 && m.step < 37) {
      m.skipped = true;
      m.loss_scale = std::max(1.0, 65536.0 / std::pow(2.0, m.step - 19));
    }
  const auto findings = find_numerics(steps);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "overflow_streak");
  EXPECT_EQ(findings[0].first_step, 20);
  EXPECT_EQ(findings[0].last_step, 36);
  EXPECT_EQ(findings[0].severity, "error");
  EXPECT_NE(findings[0].summary.find("collapsed to its minimum"), std::string::npos) << findings[0].summary;
}

TEST(Numerics, AShortStreakIsNoFinding) {
  auto steps = smooth_run(40);
  for (auto& m : steps)
    if (m.step >= 20 && m.step < 23) m.skipped = true;
  EXPECT_TRUE(find_numerics(steps).empty());
}

TEST(Numerics, ALossSpikeIsFoundAtItsStep) {
  auto steps = smooth_run(100);
  for (auto& m : steps)
    if (m.step == 70) m.loss = 9.0;
  const auto findings = find_numerics(steps);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "loss_spike");
  EXPECT_EQ(findings[0].first_step, 70);
  EXPECT_EQ(findings[0].last_step, 70);
}

}  // namespace
}  // namespace shardscope::diagnosis
