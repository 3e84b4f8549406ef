// The hostile configs of issue 22's campaign, each a regression test: numbers beyond a double,
// batch products beyond int64, and 1 MB strings and keys, which must validate in linear time.
#include <gtest/gtest.h>

#include <ctime>
#include <cstdint>
#include <string>

#include "config_test_util.hpp"
#include "configs/did_you_mean.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

// CPU seconds, not wall: ctest runs tests side by side on a shared machine.
double seconds_to_validate(const std::string& text) {
  const std::clock_t start = std::clock();
  const auto result = check(text);
  EXPECT_FALSE(result.diagnostics.empty());
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

TEST(HostileConfig, ANumberBeyondADoubleIsAnErrorNamingItsKey) {
  const auto doc = parse_config_text("{\"gradient_clipping\": 1e999,\n \"train_micro_batch_size_per_gpu\": 1}", "a.json");
  ASSERT_TRUE(doc.root);
  ASSERT_EQ(doc.parse_diagnostics.size(), 1u);
  const Diagnostic& d = doc.parse_diagnostics[0];
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.code, "number-overflow");
  EXPECT_EQ(d.path, "gradient_clipping");
  EXPECT_EQ(d.location.line, 1);
  EXPECT_EQ(d.location.column, 23);
  EXPECT_EQ(d.message, "the number 1e999 of \"gradient_clipping\" is beyond the range of a 64-bit float (about "
                       "1.8e308); DeepSpeed's hjson reader fails on it too (OverflowError: cannot convert float "
                       "infinity to integer)");
}

TEST(HostileConfig, AnOverflowInsideAnArrayNamesTheIndex) {
  const auto doc = parse_config_text(R"({"optimizer": {"params": {"betas": [0.9, -1e400]}}})", "a.json");
  ASSERT_EQ(doc.parse_diagnostics.size(), 1u);
  EXPECT_EQ(doc.parse_diagnostics[0].path, "optimizer.params.betas[1]");
}

TEST(HostileConfig, BatchProductsBeyondInt64AreErrorsNotSaturatedIdentities) {
  // INT64_MAX = 3 * INT64_MAX * 1 "held" while the product saturated.
  const auto result = check(R"({"train_batch_size": 9223372036854775807, "train_micro_batch_size_per_gpu": 3,
                                "gradient_accumulation_steps": 9223372036854775807, "gradient_clipping": 1.0})");
  const Diagnostic* d = find_code(result, "batch-overflow");
  ASSERT_NE(d, nullptr) << dump(result);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_EQ(d->path, "gradient_accumulation_steps");
  EXPECT_EQ(d->message, "micro_batch_per_gpu * gradient_acc_step * world_size = 3 * 9223372036854775807 * 1 is beyond "
                        "a 64-bit integer, so it cannot equal train_batch_size 9223372036854775807");
  EXPECT_FALSE(result.config->batch.resolved);
}

TEST(HostileConfig, ADerivedTrainBatchBeyondInt64IsAnError) {
  ValidateOptions options;
  options.world_size = 4;
  const auto result = check(R"({"train_micro_batch_size_per_gpu": 4611686018427387904,
                                "gradient_accumulation_steps": 2, "gradient_clipping": 1.0})", options);
  EXPECT_NE(find_code(result, "batch-overflow"), nullptr) << dump(result);
}

TEST(HostileConfig, AOneMegabyteStringValidatesInUnderATenthOfASecond) {
  const std::string value(1 << 20, 'x');
  EXPECT_LT(seconds_to_validate(R"({"optimizer": {"type": ")" + value + R"("}, "train_micro_batch_size_per_gpu": 1})"), 0.1);
}

TEST(HostileConfig, AOneMegabyteUnknownKeyValidatesInUnderATenthOfASecond) {
  const std::string key(1 << 20, 'k');
  EXPECT_LT(seconds_to_validate(R"({")" + key + R"(": 1, "train_micro_batch_size_per_gpu": 1})"), 0.1);
}

TEST(HostileConfig, DidYouMeanSkipsCandidatesTooFarApartInLength) {
  const std::string long_word(1 << 20, 'a');
  const std::clock_t start = std::clock();
  EXPECT_FALSE(closest_match(long_word, {"gradient_clipping", "train_batch_size"}).has_value());
  EXPECT_LT(static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC, 0.05);
  EXPECT_EQ(closest_match("gradient_clipp1ng", {"train_batch_size", "gradient_clipping"}), "gradient_clipping");
}

TEST(HostileConfig, EditDistanceKeepsOnlyTwoRowsButTheSameAnswers) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);  // a transposition
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance(std::string(5000, 'a'), "a"), 4999u);
}

TEST(HostileConfig, TheTextFormOfAMessageQuotingOneMegabyteKeepsItsEnds) {
  Diagnostic d;
  d.code = "unknown-optimizer";
  d.message = "optimizer " + std::string(1 << 20, 'x') + " is unknown";
  d.hint = "use AdamW";
  const std::string text = format_diagnostic_text("a.json", d);
  EXPECT_LT(text.size(), 1000u);
  EXPECT_NE(text.find("a.json:1:1: error: optimizer xxx"), std::string::npos);
  EXPECT_NE(text.find(" of 1048597 bytes of this line left out] ... xxx"), std::string::npos) << text.substr(0, 500);
  EXPECT_NE(text.find(" is unknown [unknown-optimizer]\n    hint: use AdamW\n"), std::string::npos) << text.substr(0, 200);
}

}  // namespace
}  // namespace shardscope::configs
