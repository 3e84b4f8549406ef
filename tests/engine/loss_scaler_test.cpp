#include "engine/loss_scaler.hpp"

#include <gtest/gtest.h>

namespace shardscope::engine {
namespace {

TEST(LossScaler, HysteresisDelaysTheFirstReduction) {
  LossScalerOptions o;  // 2^16, window 1000, hysteresis 2
  LossScaler s(o);
  EXPECT_DOUBLE_EQ(s.scale(), 65536);
  auto first = s.update(true);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first,
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis "
            "is 2. Reducing hysteresis to 1");
  EXPECT_DOUBLE_EQ(s.scale(), 65536);
  auto second = s.update(true);
  EXPECT_EQ(*second,
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768");
  EXPECT_DOUBLE_EQ(s.scale(), 32768);
}

TEST(LossScaler, DoublesAfterAWindowOfCleanSteps) {
  LossScalerOptions o;
  o.initial_scale_power = 4;
  o.loss_scale_window = 3;
  o.hysteresis = 1;
  LossScaler s(o);
  s.update(true);  // iter 0 overflows: 16 -> 8, last_overflow_iter = 0
  EXPECT_DOUBLE_EQ(s.scale(), 8);
  s.update(false);  // iter 1: (1 - 0) % 3 != 0
  s.update(false);  // iter 2
  EXPECT_DOUBLE_EQ(s.scale(), 8);
  s.update(false);  // iter 3: (3 - 0) % 3 == 0 -> doubles
  EXPECT_DOUBLE_EQ(s.scale(), 16);
  EXPECT_EQ(s.state().cur_iter, 4);
}

TEST(LossScaler, ConsecutiveHysteresisRefillsEveryCleanStep) {
  LossScalerOptions o;
  o.hysteresis = 3;
  o.consecutive_hysteresis = true;
  LossScaler s(o);
  s.update(true);
  EXPECT_EQ(s.state().cur_hysteresis, 2);
  s.update(false);
  EXPECT_EQ(s.state().cur_hysteresis, 3);
  o.consecutive_hysteresis = false;
  LossScaler t(o);
  t.update(true);
  t.update(false);
  EXPECT_EQ(t.state().cur_hysteresis, 2);  // refilled only when the scale grows
}

TEST(LossScaler, OverflowAtTheMinimumRaises) {
  LossScalerOptions o;
  o.initial_scale_power = 1;
  o.hysteresis = 1;
  o.min_loss_scale = 1;
  LossScaler s(o);
  s.update(true);  // 2 -> 1
  EXPECT_DOUBLE_EQ(s.scale(), 1);
  EXPECT_THROW(s.update(true), LossScaleAtMinimum);
}

TEST(LossScaler, StaticScaleSkipsButNeverChanges) {
  LossScalerOptions o;
  o.static_scale = 128;
  LossScaler s(o);
  EXPECT_FALSE(s.dynamic());
  EXPECT_EQ(*s.update(true), "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 128");
  EXPECT_DOUBLE_EQ(s.scale(), 128);
  EXPECT_EQ(s.update(false), std::nullopt);
}

TEST(LossScaler, RejectsInvalidDynamicSettings) {
  LossScalerOptions o;
  o.loss_scale_window = 0;
  EXPECT_THROW(LossScaler{o}, std::invalid_argument);
}

TEST(LossScaler, StateRoundTrips) {
  LossScalerOptions o;
  LossScaler a(o);
  a.update(true);
  a.update(true);
  LossScaler b(o);
  b.load_state(a.state());
  EXPECT_DOUBLE_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.state().cur_hysteresis, a.state().cur_hysteresis);
}

}  // namespace
}  // namespace shardscope::engine
