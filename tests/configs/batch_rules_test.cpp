// DeepSpeed's batch solver and assertions, checked against hand-computed values.
#include <gtest/gtest.h>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

ValidateOptions world(int n) {
  ValidateOptions options;
  options.world_size = n;
  return options;
}

TEST(BatchRules, IdentityErrorUsesDeepSpeedsWordsAndNumbers) {
  const auto result = check(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
                                "gradient_accumulation_steps": 1, "gradient_clipping": 1.0})", world(4));
  const Diagnostic* d = find_code(result, "batch-identity");
  ASSERT_NE(d, nullptr) << dump(result);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_EQ(d->message,
            "Check batch related parameters. train_batch_size is not equal to "
            "micro_batch_per_gpu * gradient_acc_step * world_size 32 != 4 * 1 * 4");
  EXPECT_EQ(d->location.line, 1);
  EXPECT_NE(d->hint.find("gradient_accumulation_steps 2"), std::string::npos) << d->hint;  // 32 / (4*4)
  EXPECT_FALSE(result.config->batch.resolved);
}

TEST(BatchRules, ConsistentKeysPass) {
  const auto result = check(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
                                "gradient_accumulation_steps": 2, "gradient_clipping": 1.0})", world(4));
  EXPECT_EQ(find_code(result, "batch-identity"), nullptr) << dump(result);
  EXPECT_TRUE(result.config->batch.resolved);
  EXPECT_EQ(result.config->batch.world_size, 4);
}

struct SolveCase {
  const char* keys;
  int world;
  std::int64_t tb, mb, gas;
};

TEST(BatchRules, SolvesTheMissingKeysWithFloorDivision) {
  const SolveCase cases[] = {
      {R"("train_batch_size": 64, "train_micro_batch_size_per_gpu": 4)", 8, 64, 4, 2},   // gas = 64//4//8
      {R"("train_batch_size": 64, "gradient_accumulation_steps": 2)", 8, 64, 4, 2},      // mb = 64//8//2
      {R"("train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 5)", 2, 30, 3, 5},
      {R"("train_batch_size": 48)", 4, 48, 12, 1},
      {R"("train_micro_batch_size_per_gpu": 6)", 3, 18, 6, 1},
  };
  for (const auto& c : cases) {
    const auto result = check("{" + std::string(c.keys) + ", \"gradient_clipping\": 1.0}", world(c.world));
    ASSERT_TRUE(result.config) << c.keys;
    const auto& b = result.config->batch;
    EXPECT_TRUE(b.resolved) << c.keys << "\n" << dump(result);
    EXPECT_EQ(b.train_batch_size, c.tb) << c.keys;
    EXPECT_EQ(b.train_micro_batch_size_per_gpu, c.mb) << c.keys;
    EXPECT_EQ(b.gradient_accumulation_steps, c.gas) << c.keys;
  }
}

TEST(BatchRules, DerivedKeysAreMarkedDerivedInTheResolvedView) {
  const auto result = check(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                                "gradient_clipping": 1.0})", world(8));
  const ResolvedValue* gas = resolved_at(result, "gradient_accumulation_steps");
  ASSERT_NE(gas, nullptr);
  EXPECT_EQ(gas->source, ValueSource::kDerived);
  EXPECT_EQ(gas->value_json, "2");
  EXPECT_EQ(resolved_at(result, "train_batch_size")->source, ValueSource::kUser);
}

TEST(BatchRules, FloorDivisionThatBreaksTheIdentityIsCaught) {
  // 30 // 4 // 4 = 1, and 1 * 4 * 4 = 16 != 30: DeepSpeed derives, then its assertion fails.
  const auto result = check(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                                "gradient_clipping": 1.0})", world(4));
  const Diagnostic* d = find_code(result, "batch-identity");
  ASSERT_NE(d, nullptr) << dump(result);
  EXPECT_NE(d->message.find("30 != 4 * 1 * 4"), std::string::npos);
}

TEST(BatchRules, ZeroDerivedAccumulationIsAPositivityError) {
  const auto result = check(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4,
                                "gradient_clipping": 1.0})", world(4));
  const Diagnostic* d = find_code(result, "batch-positive");
  ASSERT_NE(d, nullptr) << dump(result);
  EXPECT_EQ(d->message, "Gradient accumulation steps: 0 has to be greater than 0");
}

TEST(BatchRules, NegativeMicroBatchIsAPositivityError) {
  const auto result = check(R"({"train_micro_batch_size_per_gpu": -2, "gradient_clipping": 1.0})", world(1));
  // tb = mb * world = -2 is derived first, so both assertions fail.
  const Diagnostic* mb = find_code_at(result, "batch-positive", "train_micro_batch_size_per_gpu");
  ASSERT_NE(mb, nullptr) << dump(result);
  EXPECT_EQ(mb->message, "Micro batch size per gpu: -2 has to be greater than 0");
  const Diagnostic* tb = find_code_at(result, "batch-positive", "train_batch_size");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->message, "Train batch size: -2 has to be greater than 0");
}

TEST(BatchRules, MissingBatchKeysIsDeepSpeedsAssertion) {
  const auto result = check(R"({"gradient_accumulation_steps": 4, "gradient_clipping": 1.0})");
  const Diagnostic* d = find_code(result, "batch-missing");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  EXPECT_EQ(d->location.line, 1);
  EXPECT_EQ(find_code(check(clean_config()), "batch-missing"), nullptr);
}

TEST(BatchRules, WorldSizeIsInferredFromThreeKeysWhenNotGiven) {
  const auto result = check(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                                "gradient_accumulation_steps": 2, "gradient_clipping": 1.0})");
  EXPECT_EQ(find_code(result, "batch-identity"), nullptr);
  EXPECT_TRUE(has(result, "world-size-inferred", Severity::kNote));
  EXPECT_EQ(result.config->batch.world_size, 8);
  EXPECT_TRUE(result.config->batch.world_size_inferred);
}

TEST(BatchRules, AutoBatchKeysAreNotSolvedButReported) {
  const auto result = check(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                                "gradient_clipping": 1.0})", world(2));
  EXPECT_EQ(find_code(result, "batch-missing"), nullptr);
  // DeepSpeed's TypeError: "auto" // "auto" in _set_batch_related_parameters (issue 34).
  EXPECT_TRUE(has(result, "unfilled-auto", Severity::kError)) << dump(result);
  EXPECT_NE(find_code(result, "unfilled-auto")->message.find(
                "TypeError: unsupported operand type(s) for //: 'str' and 'str'"), std::string::npos) << dump(result);
  EXPECT_FALSE(result.config->batch.resolved);
}

TEST(BatchRules, SetFillsAutoBatchKeysAndTheSolverRuns) {
  ValidateOptions options = world(4);
  options.overrides = {{"train_micro_batch_size_per_gpu", "2"}, {"train_batch_size", "16"}};
  const auto result = check(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                                "gradient_clipping": 1.0})", options);
  EXPECT_FALSE(has(result, "unfilled-auto", Severity::kWarning)) << dump(result);
  EXPECT_EQ(result.config->batch.gradient_accumulation_steps, 2);
  EXPECT_EQ(resolved_at(result, "train_batch_size")->source, ValueSource::kAutoFilled);
}

}  // namespace
}  // namespace shardscope::configs
