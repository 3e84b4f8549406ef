#include "diagnosis/numerics_watch.hpp"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

sessions::StepMetrics step(int rank, std::int64_t s, double loss, bool skipped = false, double scale = 65536) {
  sessions::StepMetrics m;
  m.rank = rank;
  m.step = s;
  m.loss = loss;
  m.skipped = skipped;
  m.loss_scale = scale;
  return m;
}

// Feeds steps one at a time, as they arrive live, and collects what each check says.
std::vector<sessions::Finding> feed(NumericsWatch& watch, const std::vector<sessions::StepMetrics>& steps) {
  std::vector<sessions::Finding> all;
  for (const auto& s : steps) {
    watch.observe(s);
    for (auto& f : watch.check(static_cast<double>(s.step))) all.push_back(std::move(f));
  }
  return all;
}

TEST(NumericsWatch, ANanLossIsReportedOnceAtItsFirstStepAndRank) {
  NumericsWatch watch;
  std::vector<sessions::StepMetrics> steps;
  for (int s = 1; s <= 30; ++s)
    for (int r = 0; r < 2; ++r)
      steps.push_back(step(r, s, s >= 12 && (r == 1 || s > 12) ? std::numeric_limits<double>::quiet_NaN() : 2.0));
  const auto findings = feed(watch, steps);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "nan_loss");
  EXPECT_EQ(findings[0].first_step, 12);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
}

TEST(NumericsWatch, AnOverflowStreakIsAWarningThenAnErrorAtTheConfiguredMinimum) {
  NumericsWatch watch;
  sessions::RunStart start;
  start.config_json = R"({"fp16": {"enabled": true, "min_loss_scale": 16}})";
  watch.observe(start);
  std::vector<sessions::StepMetrics> steps;
  double scale = 65536;
  for (int s = 1; s <= 10; ++s) steps.push_back(step(0, s, 2.0, false, scale));
  for (int s = 11; s <= 30; ++s) {  // DeepSpeed halves on every overflow, down to min_loss_scale
    scale = std::max(16.0, scale / 2);
    steps.push_back(step(0, s, 2.0, true, scale));
  }
  const auto findings = feed(watch, steps);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, "overflow_streak");
  EXPECT_EQ(findings[0].severity, "warning");
  EXPECT_EQ(findings[0].first_step, 11);
  EXPECT_EQ(findings[0].last_step, 15);  // found as soon as the streak reached 5 steps
  EXPECT_EQ(findings[1].severity, "error");
  EXPECT_EQ(findings[1].last_step, 22);  // 65536 / 2^12 = 16 at step 22
  EXPECT_NE(findings[1].summary.find("collapsed to its minimum 16"), std::string::npos) << findings[1].summary;
}

TEST(NumericsWatch, EachLossSpikeIsReportedOnceAndNoisyLossesRaiseNone) {
  NumericsWatch watch;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<sessions::StepMetrics> steps;
  for (int s = 1; s <= 150; ++s) {
    double loss = 3.0 - 0.005 * s + noise(rng);
    if (s == 60 || s == 110) loss += 2;
    steps.push_back(step(0, s, loss));
  }
  const auto findings = feed(watch, steps);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].kind, "loss_spike");
  EXPECT_EQ(findings[0].first_step, 60);
  EXPECT_EQ(findings[1].first_step, 110);
}

TEST(NumericsWatch, TheMinimumScaleIsReadFromTheConfig) {
  EXPECT_DOUBLE_EQ(min_loss_scale_of(R"({"fp16": {"min_loss_scale": 0.25}})"), 0.25);
  EXPECT_DOUBLE_EQ(min_loss_scale_of(R"({"bf16": {"enabled": true}})"), 1);
  EXPECT_DOUBLE_EQ(min_loss_scale_of("not json", 4), 4);
}

}  // namespace
}  // namespace shardscope::diagnosis
