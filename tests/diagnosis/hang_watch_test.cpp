#include "diagnosis/hang_watch.hpp"

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

sessions::CollectiveMark mark(int rank, std::int64_t sequence, std::optional<double> left) {
  sessions::CollectiveMark m;
  m.rank = rank;
  m.sequence = sequence;
  m.op = "all_reduce";
  m.entered_at = 100;
  m.left_at = left;
  return m;
}

sessions::RunStart two_ranks() {
  sessions::RunStart start;
  start.world_size = 2;
  start.ranks = {{0, 0, "node-a", 1, "cpu"}, {1, 0, "node-b", 2, "cpu"}};
  return start;
}

TEST(HangWatch, ASilenceLongerThanTheLimitIsDiagnosedOnceAndProgressRearmsIt) {
  HangWatch watch(HangWatchOptions{5.0}, 100);
  watch.observe(two_ranks(), 100);
  watch.observe(mark(0, 1, 101), 101);
  watch.observe(mark(1, 1, 101), 101);
  watch.observe(mark(0, 2, std::nullopt), 102);  // rank 0 waits in #2; rank 1 never enters it
  EXPECT_FALSE(watch.check(105).has_value());    // 4 s since the last completion
  const auto f = watch.check(106.5);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_NE(f->summary.find("never entered by node-b:1"), std::string::npos) << f->summary;
  EXPECT_NE(f->evidence.find("no step and no collective completed for 5 s"), std::string::npos) << f->evidence;
  EXPECT_FALSE(watch.check(200).has_value());  // reported once per stall
  watch.observe(mark(1, 2, 201), 201);
  EXPECT_FALSE(watch.check(203).has_value());
  EXPECT_TRUE(watch.check(207).has_value());
}

TEST(HangWatch, TheDefaultLimitIsTwentyMedianStepsWithAFloor) {
  HangWatch watch(HangWatchOptions{}, 0);
  EXPECT_DOUBLE_EQ(watch.hang_after_s(), 300);  // before any progress: the start's floor
  sessions::StepMetrics first;
  first.step = 1;
  watch.observe(first, 1);
  EXPECT_DOUBLE_EQ(watch.hang_after_s(), 60);  // no step time yet: the floor
  for (int s = 1; s <= 9; ++s) {
    sessions::StepMetrics step;
    step.step = s;
    step.step_time_ms = s == 9 ? 90000 : 5000;  // one slow step does not move the median
    watch.observe(step, s);
  }
  EXPECT_DOUBLE_EQ(watch.hang_after_s(), 100);  // 20 x 5 s
  EXPECT_FALSE(watch.check(108).has_value());
  EXPECT_TRUE(watch.check(109.5).has_value());
}

TEST(HangWatch, ARunThatNeverStartsIsAHangOnlyAfterTheStartFloor) {
  HangWatchOptions options;
  options.hang_after_s = 5;
  options.first_progress_floor_s = 30;
  HangWatch watch(options, 100);
  watch.observe(two_ranks(), 100);
  watch.observe(mark(0, 1, std::nullopt), 110);  // rank 0 waits in its first collective
  EXPECT_FALSE(watch.check(120).has_value()) << "a slow model build is not a hang";
  const auto f = watch.check(131);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->ranks, std::vector<int>{1});
}

}  // namespace
}  // namespace shardscope::diagnosis
