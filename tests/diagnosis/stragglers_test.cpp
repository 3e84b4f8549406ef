#include "diagnosis/stragglers.hpp"

#include <random>

#include <gtest/gtest.h>

namespace shardscope::diagnosis {
namespace {

using sessions::TimerBreakdown;

// Four ranks for `steps` steps with noisy phase times; `slow` rank's forward is `factor` slower,
// and the others wait the difference in backward_allreduce (what a straggler does to its peers).
std::vector<TimerBreakdown> run(int steps, int slow, double factor, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1.5);
  std::vector<TimerBreakdown> out;
  for (int s = 1; s <= steps; ++s)
    for (int r = 0; r < 4; ++r) {
      const double forward = 40 * (r == slow ? factor : 1.0) + noise(rng);
      const double wait = r == slow ? 2 : 2 + 40 * (factor - 1);
      out.push_back({r, s, {{"forward", forward}, {"backward_inner", 80 + noise(rng)}, {"backward_allreduce", wait},
                            {"backward", 80 + wait}, {"step", 10 + noise(rng) * 0.2}}});
    }
  return out;
}

TEST(Stragglers, ATwentyFivePercentSlowerForwardIsFlaggedWithItsPhaseAndHost) {
  RunPicture picture;
  picture.hosts = {{0, "node-a"}, {1, "node-a"}, {2, "node-b"}, {3, "node-b"}};
  const auto findings = find_stragglers(run(20, 2, 1.25, 1), picture);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_NE(findings[0].summary.find("node-b:2 is slow in forward"), std::string::npos) << findings[0].summary;
  EXPECT_EQ(findings[0].last_step, 20);
}

TEST(Stragglers, CleanRunsRaiseNoFlag) {
  for (unsigned seed = 1; seed <= 50; ++seed)
    EXPECT_TRUE(find_stragglers(run(40, -1, 1.0, seed), RunPicture{}).empty()) << "seed " << seed;
}

TEST(Stragglers, TheVictimsLongerWaitIsNeverBlamed) {
  EXPECT_TRUE(is_collective_wait("backward_allreduce"));
  EXPECT_TRUE(is_collective_wait("stage3_gather_wait"));
  EXPECT_FALSE(is_collective_wait("forward"));
  for (const auto& f : find_stragglers(run(20, 0, 1.5, 3), RunPicture{})) EXPECT_EQ(f.ranks, std::vector<int>{0});
}

}  // namespace
}  // namespace shardscope::diagnosis
