#include "diagnosis/straggler_watch.hpp"

#include <random>

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

using sessions::TimerBreakdown;

// Step timers of 4 ranks with the noise real runs have: each rank up to 2.5 % off the others for
// good (another CPU bin, another NUMA node), 8 % multiplicative jitter, spikes on 3 % of the phases
// (x1.5-3: a GC pause, page faults) and bursts of 3-6 steps 20 % slower (a noisy neighbour, about
// once in 500 steps per rank). Denser bursts make a rank slow for real: two of them in 20 steps
// (seed 3 at 0.5 % a step) put a rank 16 % behind, which the watch rightly flags. `slow` rank's `phase`
// is `factor` slower from step `from` to step `to`; the others wait for it in backward_allreduce.
class NoisyRun {
 public:
  NoisyRun(unsigned seed, int slow = -1, std::string phase = "", double factor = 1, int from = 0, int to = 1 << 30)
      : rng_(seed), slow_(slow), phase_(std::move(phase)), factor_(factor), from_(from), to_(to) {
    std::uniform_real_distribution<double> offset(-0.025, 0.025);
    for (double& o : offsets_) o = 1 + offset(rng_);
  }
  std::vector<TimerBreakdown> step(int s) {
    std::vector<TimerBreakdown> out;
    std::lognormal_distribution<double> jitter(0, 0.08);
    std::uniform_real_distribution<double> u(0, 1);
    for (int r = 0; r < 4; ++r) {
      if (burst_left_[r] == 0 && u(rng_) < 0.002) burst_left_[r] = 3 + static_cast<int>(u(rng_) * 4);
      const double burst = burst_left_[r] > 0 ? (--burst_left_[r], 1.2) : 1.0;
      auto phase_ms = [&](const std::string& name, double base) {
        double ms = base * offsets_[r] * jitter(rng_) * burst;
        if (u(rng_) < 0.03) ms *= 1.5 + 1.5 * u(rng_);
        if (r == slow_ && name == phase_ && s >= from_ && s < to_) ms *= factor_;
        return ms;
      };
      out.push_back({r, s, {{"forward", phase_ms("forward", 40)}, {"backward_inner", phase_ms("backward_inner", 80)},
                            {"backward_allreduce", 5 + 20 * u(rng_)}, {"step", phase_ms("step", 10)}}});
    }
    return out;
  }

 private:
  std::mt19937 rng_;
  int slow_;
  std::string phase_;
  double factor_;
  int from_, to_;
  double offsets_[4];
  int burst_left_[4] = {0, 0, 0, 0};
};

sessions::RunStart four_ranks() {
  sessions::RunStart start;
  start.world_size = 4;
  start.ranks = {{0, 0, "node-a", 1, "cpu"}, {1, 1, "node-a", 2, "cpu"}, {2, 0, "node-b", 3, "cpu"}, {3, 1, "node-b", 4, "cpu"}};
  return start;
}

TEST(StragglerWatch, CleanNoisyRunsRaiseNoFlagAtAnyStep) {
  int checks = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    NoisyRun run(seed);
    StragglerWatch watch;
    watch.observe(four_ranks());
    for (int s = 1; s <= 300; ++s) {
      for (const auto& t : run.step(s)) watch.observe(t);
      const auto findings = watch.check(s);
      ++checks;
      ASSERT_TRUE(findings.empty()) << "seed " << seed << " step " << s << ": " << findings.front().summary;
    }
  }
  EXPECT_EQ(checks, 30 * 300);
}

TEST(StragglerWatch, APersistentlySlowPhaseIsFlaggedWithinTwentyStepsAndClearedOnRecovery) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    NoisyRun run(seed, 2, "backward_inner", 1.25, 60, 150);
    StragglerWatch watch;
    watch.observe(four_ranks());
    std::optional<int> flagged_at, cleared_at;
    for (int s = 1; s <= 200; ++s) {
      for (const auto& t : run.step(s)) watch.observe(t);
      for (const auto& f : watch.check(s)) {
        if (f.kind == "straggler") {
          ASSERT_FALSE(flagged_at) << "seed " << seed << ": flagged twice: " << f.summary;
          flagged_at = s;
          EXPECT_EQ(f.ranks, std::vector<int>{2});
          EXPECT_NE(f.summary.find("node-b:2 is slow in backward_inner"), std::string::npos) << f.summary;
          EXPECT_NE(f.summary.find(" ms, "), std::string::npos) << "the gap: " << f.summary;
        } else {
          ASSERT_EQ(f.kind, "straggler_cleared") << f.summary;
          cleared_at = s;
          EXPECT_NE(f.summary.find("node-b:2 caught up in backward_inner"), std::string::npos) << f.summary;
        }
      }
    }
    ASSERT_TRUE(flagged_at) << "seed " << seed << ": never flagged";
    EXPECT_GE(*flagged_at, 60) << "seed " << seed;
    EXPECT_LE(*flagged_at, 80) << "seed " << seed << ": flagged later than 20 steps after the slowdown";
    ASSERT_TRUE(cleared_at) << "seed " << seed << ": never cleared";
    EXPECT_GT(*cleared_at, 150);
    EXPECT_LT(*cleared_at, 180) << "seed " << seed;
  }
}

TEST(StragglerWatch, NothingIsJudgedUntilEveryRankReportedTheStep) {
  StragglerWatch watch;
  watch.observe(four_ranks());
  for (int s = 1; s <= 40; ++s)
    for (int r = 0; r < 3; ++r)  // rank 3 never reports
      watch.observe(TimerBreakdown{r, s, {{"forward", r == 2 ? 90.0 : 40.0}}});
  EXPECT_TRUE(watch.check(1).empty());
  for (int s = 1; s <= 40; ++s) watch.observe(TimerBreakdown{3, s, {{"forward", 40.0}}});
  const auto findings = watch.check(2);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
}

}  // namespace
}  // namespace shardscope::diagnosis
