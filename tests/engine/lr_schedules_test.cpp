// Each schedule against DeepSpeed's formula, evaluated by hand at points where it is exact.
#include "engine/lr_schedules.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace shardscope::engine {
namespace {

TEST(WarmupLR, LogWarmupReachesHalfAtTheSquareRootOfItsLength) {
  WarmupLrParams p;
  p.warmup_min_lr = 0.1;
  p.warmup_max_lr = 1.1;
  p.warmup_num_steps = 100;
  auto s = make_warmup_lr(p, 0.5);
  EXPECT_DOUBLE_EQ(s->lr_at(-1), 0.1);  // min_lr is put in the optimizer at construction
  EXPECT_DOUBLE_EQ(s->lr_at(0), 0.1);   // log(1) = 0
  EXPECT_NEAR(s->lr_at(9), 0.1 + 1.0 * 0.5, 1e-15);  // log(10)/log(100)
  EXPECT_DOUBLE_EQ(s->lr_at(100), 1.1);
  EXPECT_DOUBLE_EQ(s->lr_at(5000), 1.1);
}

TEST(WarmupLR, LinearWarmupAndOptimizerLrAsMaximum) {
  WarmupLrParams p;
  p.warmup_num_steps = 10;
  p.warmup_type = WarmupType::kLinear;
  auto s = make_warmup_lr(p, 0.02);  // warmup_max_lr unset: the optimizer's lr
  EXPECT_DOUBLE_EQ(s->lr_at(5), 0.02 * 0.5);
  EXPECT_DOUBLE_EQ(s->lr_at(10), 0.02);
  s->step();
  s->step();
  EXPECT_EQ(s->last_batch_iteration(), 1);
  EXPECT_DOUBLE_EQ(s->current_lr(), 0.02 * 0.1);
}

TEST(WarmupLR, ClampsWarmupToTwoAndRejectsNonPositive) {
  WarmupLrParams p;
  p.warmup_num_steps = 1;
  p.warmup_max_lr = 1.0;
  auto s = make_warmup_lr(p, 1.0);
  EXPECT_DOUBLE_EQ(s->lr_at(1), std::log(2.0) / std::log(2.0));
  p.warmup_num_steps = 0;
  EXPECT_THROW(make_warmup_lr(p, 1.0), std::invalid_argument);
}

TEST(WarmupDecayLR, DecaysLinearlyToZeroAtTotal) {
  WarmupDecayLrParams p;
  p.total_num_steps = 110;
  p.warmup.warmup_num_steps = 10;
  p.warmup.warmup_type = WarmupType::kLinear;
  auto s = make_warmup_decay_lr(p, 123.0);  // max lr defaults to 0.001, not the optimizer lr
  EXPECT_DOUBLE_EQ(s->lr_at(10), 0.001 * 100.0 / 100.0);
  EXPECT_DOUBLE_EQ(s->lr_at(60), 0.001 * 50.0 / 100.0);
  EXPECT_DOUBLE_EQ(s->lr_at(110), 0.0);
  EXPECT_DOUBLE_EQ(s->lr_at(500), 0.0);
}

TEST(WarmupCosineLR, WarmsUpThenFollowsTheCosineToItsFloor) {
  WarmupCosineLrParams p;
  p.total_num_steps = 20;
  p.warmup_num_steps = 10;
  p.warmup_type = WarmupType::kLinear;
  p.warmup_min_ratio = 0.1;
  p.cos_min_ratio = 0.01;
  auto s = make_warmup_cosine_lr(p, 2.0);
  EXPECT_DOUBLE_EQ(s->lr_at(-1), 0.0);
  EXPECT_DOUBLE_EQ(s->lr_at(5), 2.0 * (0.1 + 0.5 * 0.9));
  // it = 14: real_last = 5 of 10 -> cos(pi/2) = 0 -> ratio = cos_min + (1-cos_min)/2.
  EXPECT_NEAR(s->lr_at(14), 2.0 * (0.01 + 0.99 * 0.5), 1e-12);
  EXPECT_NEAR(s->lr_at(19), 2.0 * 0.01, 1e-12);
}

TEST(OneCycle, PeaksAtTheEndOfTheFirstStepAndCyclesMomentumInverse) {
  OneCycleParams p;
  p.cycle_min_lr = 0.01;
  p.cycle_max_lr = 0.1;
  p.cycle_first_step_size = 10;
  p.cycle_min_mom = 0.85;
  p.cycle_max_mom = 0.95;
  auto s = make_one_cycle(p);
  EXPECT_DOUBLE_EQ(s->lr_at(-1), 0.01);
  EXPECT_DOUBLE_EQ(s->lr_at(9), 0.1);        // x = 10/20 = step_ratio -> scale 1
  EXPECT_NEAR(s->lr_at(4), 0.01 + 0.09 * 0.5, 1e-15);
  EXPECT_NEAR(s->lr_at(14), 0.01 + 0.09 * 0.5, 1e-15);  // halfway down
  EXPECT_NEAR(*s->momentum_at(9), 0.85, 1e-15);          // momentum lowest at the lr peak
  EXPECT_EQ(s->beta2(), 0.99);
  EXPECT_DOUBLE_EQ(s->lr_at(100), 0.01);  // no decay configured: stays at min
}

TEST(OneCycle, PostCycleDecay) {
  OneCycleParams p;
  p.cycle_min_lr = 0.01;
  p.cycle_max_lr = 0.1;
  p.cycle_first_step_size = 10;
  p.decay_step_size = 5;
  p.decay_lr_rate = 1.0;
  p.cycle_momentum = false;
  auto s = make_one_cycle(p);
  // it = 24: decay iteration 5 -> interval 1 -> lr = min / (1 + 1).
  EXPECT_DOUBLE_EQ(s->lr_at(24), 0.005);
  EXPECT_EQ(s->momentum_at(24), std::nullopt);
}

TEST(LRRangeTest, ContinuousAndStaircase) {
  LrRangeTestParams p;
  p.lr_range_test_min_lr = 0.001;
  p.lr_range_test_step_size = 10;
  p.lr_range_test_step_rate = 2.0;
  auto s = make_lr_range_test(p);
  EXPECT_DOUBLE_EQ(s->lr_at(4), 0.001 * (1 + 2.0 * 0.5));
  p.lr_range_test_staircase = true;
  auto stairs = make_lr_range_test(p);
  EXPECT_DOUBLE_EQ(stairs->lr_at(4), 0.001);
  EXPECT_DOUBLE_EQ(stairs->lr_at(9), 0.001 * 3.0);
}

}  // namespace
}  // namespace shardscope::engine
