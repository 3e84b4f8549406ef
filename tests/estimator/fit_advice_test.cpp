// The smallest change that fits, for the run doctor's out-of-memory finding: checked against the
// estimator's own bound for every change it tried, on a GPT-2 1.3B shape at ZeRO stage 0.
#include <gtest/gtest.h>

#include "estimator/estimator_error.hpp"
#include "estimator/fit_advice.hpp"
#include "estimator/plan_estimate.hpp"

namespace shardscope::estimator {
namespace {

ModelDescription gpt2_1_3b() {
  TransformerShape s = default_shape(TransformerLayout::kGpt2);
  s.layers = 24;
  s.hidden = 2048;
  s.heads = 16;
  s.vocab = 50304;
  s.seq_len = 1024;
  return describe_transformer(s, "gpt2-1.3b");
}

EstimateOptions stage0_micro_batch(long long micro_batch) {
  EstimateOptions o;
  o.requested_plan = ZeroPlan{0, OffloadDevice::kNone, OffloadDevice::kNone};
  o.workload.micro_batch = micro_batch;
  o.workload.seq_len = 1024;
  return o;
}

double bound(const ModelDescription& m, const EstimateOptions& o) {
  return estimate_plan(m, *o.requested_plan, o, estimate_activations(m, o.workload, o.precision.precision, 1),
                       std::nullopt, "")
      .peak.device_upper_bytes;
}

TEST(FitAdvice, APlanThatFitsNeedsNoChange) {
  const auto advice = advise_fit(gpt2_1_3b(), stage0_micro_batch(8), 141.0 * kGiB);
  EXPECT_TRUE(advice.fits);
  EXPECT_FALSE(advice.change.has_value());
  EXPECT_LT(advice.bound_bytes, advice.usable_bytes);
}

TEST(FitAdvice, TooLargeAMicroBatchIsHalvedKeepingTheGlobalBatch) {
  // Micro-batch 64 needs far more than an 80 GiB card: the largest micro-batch below it that fits
  // is the advice, with the accumulation that keeps 64 samples a step, and each larger one tried
  // first did not fit.
  const auto m = gpt2_1_3b();
  const auto o = stage0_micro_batch(64);
  const auto advice = advise_fit(m, o, 80.0 * kGiB);
  ASSERT_FALSE(advice.fits);
  ASSERT_TRUE(advice.change.has_value()) << advice.tried.size();
  const auto& c = *advice.change;
  EXPECT_EQ(c.what.rfind("micro-batch 64 -> ", 0), 0u) << c.what;
  ASSERT_EQ(c.train_flags.size(), 4u);
  const long long mb = std::stoll(c.train_flags[1].substr(c.train_flags[1].find('=') + 1));
  const long long gas = std::stoll(c.train_flags[3].substr(c.train_flags[3].find('=') + 1));
  EXPECT_EQ(mb * gas, 64);
  EXPECT_LE(c.bound_bytes, advice.usable_bytes);
  auto twice = o;
  twice.workload.micro_batch = mb * 2;
  EXPECT_GT(bound(m, twice), advice.usable_bytes) << "a larger micro-batch would have fitted";
  EXPECT_EQ(advice.tried.size(), static_cast<std::size_t>(__builtin_ctzll(64 / mb)));
}

TEST(FitAdvice, WhenStatesAloneOverflowTheOptimizerGoesToTheCpu) {
  // 16 bytes a parameter (21 GB) leave no room on a 24 GiB card at any micro-batch or stage on one
  // GPU: offloading the optimizer states is the first change that fits.
  const auto advice = advise_fit(gpt2_1_3b(), stage0_micro_batch(4), 24.0 * kGiB);
  ASSERT_TRUE(advice.change.has_value());
  EXPECT_NE(advice.change->what.find("offloaded to the CPU"), std::string::npos) << advice.change->what;
  EXPECT_NE(std::find(advice.change->train_flags.begin(), advice.change->train_flags.end(),
                      "zero_optimization.offload_optimizer.device=cpu"),
            advice.change->train_flags.end());
  EXPECT_GE(advice.tried.size(), 4u);  // micro-batches 2, 1, checkpointing, stages 1-3 tried first
}

TEST(FitAdvice, NothingFitsATinyCardAndTheAdviceSaysSoWithoutAChange) {
  const auto advice = advise_fit(gpt2_1_3b(), stage0_micro_batch(4), 1.0 * kGiB);
  EXPECT_FALSE(advice.fits);
  EXPECT_FALSE(advice.change.has_value());
  EXPECT_FALSE(advice.tried.empty());
}

TEST(FitAdvice, NeedsThePlanThatRan) {
  EstimateOptions o;
  EXPECT_THROW(advise_fit(gpt2_1_3b(), o, 80.0 * kGiB), EstimatorError);
}

}  // namespace
}  // namespace shardscope::estimator
