// DeepSpeed's wall-clock timers on the host clock, driven by a fake clock so every interval is exact.
#include <gtest/gtest.h>

#include "profiler/profiler_error.hpp"
#include "profiler/step_timers.hpp"

namespace shardscope::profiler {
namespace {

class StepTimersTest : public ::testing::Test {
 protected:
  double now_ = 1000;
  StepTimers timers_{[this] { return now_; }};
  void interval(const std::string& name, double ms) {
    timers_(name).start();
    now_ += ms;
    timers_(name).stop();
  }
};

TEST_F(StepTimersTest, ElapsedSumsIntervalsUntilReset) {
  interval("fwd", 10);
  now_ += 100;  // time between intervals is not counted
  interval("fwd", 2.5);
  EXPECT_DOUBLE_EQ(timers_("fwd").elapsed_ms(false), 12.5);
  EXPECT_DOUBLE_EQ(timers_("fwd").elapsed_ms(), 12.5);  // reads and resets
  EXPECT_DOUBLE_EQ(timers_("fwd").elapsed_ms(), 0.0);
}

TEST_F(StepTimersTest, ReadingARunningTimerStopsAndRestartsIt) {
  timers_("bwd").start();
  now_ += 7;
  EXPECT_DOUBLE_EQ(timers_("bwd").elapsed_ms(), 7.0);
  EXPECT_TRUE(timers_("bwd").running());
  now_ += 3;
  timers_("bwd").stop();
  EXPECT_DOUBLE_EQ(timers_("bwd").elapsed_ms(), 3.0);
}

TEST_F(StepTimersTest, MisuseIsAnError) {
  timers_("step").start();
  EXPECT_THROW(timers_("step").start(), ProfilerError);
  timers_("step").stop();
  EXPECT_THROW(timers_("step").stop(), ProfilerError);
  EXPECT_THROW(timers_.log_line({"step"}, 0.0), ProfilerError);
  if (!cuda_timers_available()) {
    EXPECT_THROW(timers_("x").start_on_stream(nullptr), ProfilerError);
  }
}

TEST_F(StepTimersTest, TrimmedMeanDropsTenPercentAtEachEnd) {
  // 20 intervals: 1..18 ms plus outliers 0.01 and 500; trim_mean(x, 0.1) drops 2 at each end:
  // 0.01, 1 and 18, 500 -> mean of 2..17 = 9.5.
  for (int i = 1; i <= 18; ++i) interval("fwd_microstep", i);
  interval("fwd_microstep", 0.01);
  interval("fwd_microstep", 500);
  EXPECT_DOUBLE_EQ(timers_("fwd_microstep").mean_ms(), 9.5);
  EXPECT_NEAR(timers_.means({"fwd_microstep", "missing"}, 2.0).at("fwd_microstep"), 4.75, 1e-12);
  EXPECT_EQ(timers_.means({"missing"}).size(), 0u);
  EXPECT_EQ(timers_("fwd_microstep").intervals_ms().size(), 20u);
}

TEST_F(StepTimersTest, LogLineIsDeepSpeeds) {
  interval("fwd_microstep", 12.344);
  interval("bwd_microstep", 30);
  interval("bwd_inner_microstep", 20.004);
  interval("bwd_allreduce_microstep", 9.996);
  interval("step_microstep", 1.5);
  EXPECT_EQ(timers_.log_line(microstep_timer_names()),
            "time (ms) | fwd_microstep: 12.34 | bwd_microstep: 30.00 | bwd_inner_microstep: 20.00 | "
            "bwd_allreduce_microstep: 10.00 | step_microstep: 1.50");
  EXPECT_EQ(timers_.log_line(microstep_timer_names()),
            "time (ms) | fwd_microstep: 0.00 | bwd_microstep: 0.00 | bwd_inner_microstep: 0.00 | "
            "bwd_allreduce_microstep: 0.00 | step_microstep: 0.00");
  // Timers never started are left out, as DeepSpeed's `if name in self.timers`.
  interval("fwd", 40);
  EXPECT_EQ(timers_.log_line(global_timer_names(), 4.0), "time (ms) | fwd: 10.00");
}

TEST_F(StepTimersTest, BreakdownFeedsTheSession) {
  interval("fwd", 3);
  interval("step", 1);
  const auto values = timers_.breakdown(global_timer_names());
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].name, "fwd");
  EXPECT_DOUBLE_EQ(values[0].ms, 3.0);
  EXPECT_EQ(values[1].name, "step");
  EXPECT_EQ(timers_.names(), (std::vector<std::string>{"fwd", "step"}));
}

TEST(StepTimers, SteadyClockMeasuresRealTime) {
  StepTimers timers;
  timers("host").start();
  volatile double sink = 0;
  for (int i = 0; i < 2000000; ++i) sink = sink + i;
  timers("host").stop();
  const double ms = timers("host").elapsed_ms();
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 10000.0);
}

}  // namespace
}  // namespace shardscope::profiler
