// Resolution (defaults, "auto", --set, derived values, typed config) and the field-lesson rules:
// unfilled auto, default flips, comms_logger, --strict policies.
#include <gtest/gtest.h>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

TEST(Resolver, CodeDefaultsWinOverTheDocs) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 3})"));
  ASSERT_TRUE(result.config);
  const ZeroConfig& zero = result.config->zero;
  EXPECT_EQ(zero.prefetch_bucket_size, 50000000);  // docs say 5e8
  EXPECT_EQ(zero.reduce_bucket_size, 500000000);
  EXPECT_EQ(zero.param_persistence_threshold, 100000);
  EXPECT_EQ(zero.sub_group_size, 1000000000);
  EXPECT_TRUE(zero.overlap_comm);  // None -> stage == 3
  const ResolvedValue* overlap = resolved_at(result, "zero_optimization.overlap_comm");
  ASSERT_NE(overlap, nullptr);
  EXPECT_EQ(overlap->source, ValueSource::kDerived);
  EXPECT_EQ(resolved_at(result, "zero_optimization.stage3_prefetch_bucket_size")->source, ValueSource::kDefault);
  EXPECT_EQ(resolved_at(result, "zero_optimization.stage")->source, ValueSource::kUser);
  EXPECT_EQ(resolved_at(result, "zero_optimization.stage")->location.line, 5);
  EXPECT_FALSE(check(clean_config(R"("zero_optimization": {"stage": 1})")).config->zero.overlap_comm);
}

TEST(Resolver, TypedConfigCarriesWhatTheEstimatorNeeds) {
  ValidateOptions options;
  options.world_size = 8;
  const auto result = check(R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 8,
    "gradient_clipping": 0.5, "bf16": {"enabled": true, "check_grad_overflow": false},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": false},
      "offload_param": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true, "buffer_count": 6},
      "reduce_bucket_size": 2e8, "stage3_prefetch_bucket_size": 3e7}})", options);
  ASSERT_TRUE(result.config);
  const ResolvedConfig& c = *result.config;
  EXPECT_EQ(c.precision(), PrecisionMode::kBf16);
  EXPECT_EQ(c.zero.stage, 3);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::kCpu);
  EXPECT_FALSE(c.zero.offload_optimizer.pin_memory);
  EXPECT_EQ(c.zero.offload_param.device, OffloadDevice::kNvme);
  EXPECT_EQ(c.zero.offload_param.nvme_path.value_or(""), "/nvme");
  EXPECT_EQ(c.zero.offload_param.buffer_count, 6);
  EXPECT_EQ(c.zero.reduce_bucket_size, 200000000);
  EXPECT_EQ(c.zero.prefetch_bucket_size, 30000000);
  EXPECT_EQ(c.batch.gradient_accumulation_steps, 4);  // 256 // 8 // 8
  EXPECT_DOUBLE_EQ(c.gradient_clipping, 0.5);
  EXPECT_FALSE(c.bf16.check_grad_overflow);
}

TEST(Resolver, AutoInPydanticBlocksIsDroppedAndAtTopLevelKept) {
  const auto result = check(clean_config(R"("fp16": {"enabled": "auto", "loss_scale_window": "auto"},
    "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"})"));
  EXPECT_EQ(resolved_at(result, "fp16.loss_scale_window")->source, ValueSource::kAutoDropped);
  EXPECT_EQ(resolved_at(result, "fp16.loss_scale_window")->value_json, "1000");
  EXPECT_EQ(result.config->zero.prefetch_bucket_size, 50000000);
  EXPECT_FALSE(result.config->fp16.enabled);
  const auto top = check(R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": "auto"})");
  EXPECT_EQ(resolved_at(top, "gradient_clipping")->source, ValueSource::kAutoUnfilled);
  EXPECT_EQ(resolved_at(top, "gradient_clipping")->value_json, "\"auto\"");
}

TEST(Resolver, SetFillsAutoAndOverridesAnyKey) {
  ValidateOptions options;
  options.overrides = {{"fp16.enabled", "true"}, {"optimizer.params.lr", "3e-5"},
                       {"zero_optimization.stage", "2"}, {"steps_per_print", "50"}};
  const auto result = check(clean_config(R"("fp16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "overlap_comm": true},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto"}})"), options);
  EXPECT_FALSE(has(result, "unfilled-auto", Severity::kWarning)) << dump(result);
  EXPECT_TRUE(result.config->fp16.enabled);
  EXPECT_EQ(resolved_at(result, "fp16.enabled")->source, ValueSource::kAutoFilled);
  EXPECT_DOUBLE_EQ(result.config->optimizer.lr, 3e-5);
  EXPECT_EQ(resolved_at(result, "optimizer.params.lr")->source, ValueSource::kAutoFilled);
  EXPECT_EQ(result.config->zero.stage, 2);
  EXPECT_EQ(resolved_at(result, "zero_optimization.stage")->source, ValueSource::kOverride);
  EXPECT_EQ(*result.config->steps_per_print, 50);  // a key the file did not have
  EXPECT_EQ(resolved_at(result, "steps_per_print")->source, ValueSource::kOverride);
}

TEST(Resolver, BadOverridePathIsReported) {
  ValidateOptions options;
  options.overrides = {{"gradient_clipping.x", "1"}};
  EXPECT_TRUE(has(check(clean_config(), options), "bad-override", Severity::kError));
  EXPECT_THROW(parse_override("no_equals_sign"), std::invalid_argument);
  EXPECT_EQ(parse_override("a.b=c=d").value, "c=d");
}

TEST(PolicyRules, UnfilledAutoIsDeepSpeedsFailureNamingTheFlags) {
  // DeepSpeed keeps the string and fails in deepspeed.initialize (issue 34); in a pydantic block it
  // drops "auto" for the default, which stays a warning.
  const auto dropped = check(clean_config(
      R"("optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": "auto"})"));
  EXPECT_TRUE(has(dropped, "unfilled-auto", Severity::kWarning)) << dump(dropped);
  EXPECT_FALSE(dropped.has_errors()) << dump(dropped);
  const auto result = check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"lr": "auto"}})"));
  const Diagnostic* d = find_code(result, "unfilled-auto");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->hint.find("--hf-trainer"), std::string::npos);
  EXPECT_EQ(d->path, "optimizer.params.lr");
  EXPECT_NE(d->hint.find("--set optimizer.params.lr=VALUE"), std::string::npos);
  EXPECT_EQ(find_code(check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"lr": 0.001}})")),
                      "unfilled-auto"), nullptr);
}

TEST(PolicyRules, DefaultFlips) {
  const auto no_clip = check(R"({"train_micro_batch_size_per_gpu": 2})");
  EXPECT_TRUE(has(no_clip, "default-flip", Severity::kWarning));
  EXPECT_DOUBLE_EQ(no_clip.config->gradient_clipping, 1.0);
  EXPECT_FALSE(has(check(clean_config()), "default-flip", Severity::kWarning));
  const auto pin = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "cpu"}})"));
  const Diagnostic* d = find_code(pin, "default-flip");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("0.19.5"), std::string::npos);
  EXPECT_TRUE(pin.config->zero.offload_optimizer.pin_memory);
  const auto overflow = check(clean_config(R"("bf16": {"enabled": true})"));
  EXPECT_NE(find_code(overflow, "default-flip")->message.find("check_grad_overflow"), std::string::npos);
  EXPECT_FALSE(has(check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true})")),
                   "default-flip", Severity::kWarning));
}

TEST(PolicyRules, CommsLoggerDisabledStillLogs) {
  const auto result = check(clean_config(R"("comms_logger": {"enabled": false})"));
  EXPECT_TRUE(has(result, "comms-logger-disabled", Severity::kWarning));
  EXPECT_TRUE(result.config->comms_logger.effective_enabled);
  EXPECT_FALSE(result.config->comms_logger.enabled_as_written);
  EXPECT_EQ(resolved_at(result, "comms_logger.enabled")->source, ValueSource::kDerived);
  EXPECT_FALSE(has(check(clean_config(R"("comms_logger": {"enabled": true})")), "comms-logger-disabled", Severity::kWarning));
  EXPECT_FALSE(check(clean_config()).config->comms_logger.effective_enabled);
}

TEST(PolicyRules, FlopsProfilerForcesTimers) {
  const auto result = check(clean_config(R"("flops_profiler": {"enabled": true})"));
  EXPECT_TRUE(result.config->wall_clock_breakdown);
  EXPECT_EQ(resolved_at(result, "wall_clock_breakdown")->source, ValueSource::kDerived);
}

TEST(PolicyRules, StrictLints) {
  ValidateOptions strict;
  strict.strict = true;
  const auto no_clip = check(R"({"train_micro_batch_size_per_gpu": 2})", strict);
  EXPECT_TRUE(has(no_clip, "policy-explicit-clipping", Severity::kError));
  EXPECT_FALSE(has(check(R"({"train_micro_batch_size_per_gpu": 2})"), "policy-explicit-clipping", Severity::kError));
  const auto two = check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true}, "torch_autocast": {"enabled": true})"), strict);
  EXPECT_TRUE(has(two, "policy-one-precision", Severity::kError)) << dump(two);
  EXPECT_FALSE(has(check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true})"), strict),
                   "policy-one-precision", Severity::kError));
  // hjson leniencies show as notes only under --strict.
  const std::string commented = "{\n // c\n \"train_micro_batch_size_per_gpu\": 1, \"gradient_clipping\": 1.0,\n}";
  EXPECT_TRUE(has(check(commented, strict), "json-comment", Severity::kNote));
  EXPECT_TRUE(has(check(commented, strict), "trailing-comma", Severity::kNote));
  EXPECT_FALSE(has(check(commented), "json-comment", Severity::kNote));
}

TEST(RuntimeRules, VocabularySizeMultipleOf8) {
  EXPECT_TRUE(has(check(clean_config(R"("vocabulary_size": 50257)")), "vocabulary-size", Severity::kWarning));
  EXPECT_FALSE(has(check(clean_config(R"("vocabulary_size": 50304)")), "vocabulary-size", Severity::kWarning));
}

}  // namespace
}  // namespace shardscope::configs
