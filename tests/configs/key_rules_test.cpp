// Unknown keys (error in pydantic blocks, warning in lenient ones, with "did you mean"), types,
// ranges, allowed strings, removed features and deprecated keys.
#include <gtest/gtest.h>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

TEST(KeyRules, UnknownKeyInAStrictBlockIsAnErrorWithASuggestion) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true,
    "reduce_bucket_sise": 5e8})"));
  const Diagnostic* d = find_code(result, "unknown-key");
  ASSERT_NE(d, nullptr) << dump(result);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_EQ(d->path, "zero_optimization.reduce_bucket_sise");
  EXPECT_EQ(d->location.line, 6);
  EXPECT_NE(d->message.find("Extra inputs are not permitted"), std::string::npos);
  EXPECT_EQ(d->hint, "did you mean \"reduce_bucket_size\"?");
}

TEST(KeyRules, StrictBlocksIncludeOffloadFp16Bf16MonitorsAndCommsLogger) {
  for (const std::string block :
       {R"("zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": true, "pin_mem": true}})",
        R"("fp16": {"enabled": true, "loss_scal": 0})", R"("bf16": {"enabled": true, "check_grad_overflow": true, "enabeld": true})",
        R"("tensorboard": {"enabled": false, "outputpath": "x"})", R"("wandb": {"projet": "x"})",
        R"("csv_monitor": {"job": "x"})", R"("comet": {"enabled": false, "api": "x"})",
        R"("comms_logger": {"enabled": true, "verbos": true})"}) {
    const auto result = check(clean_config(block));
    EXPECT_TRUE(has(result, "unknown-key", Severity::kError)) << block << "\n" << dump(result);
  }
}

TEST(KeyRules, UnknownKeyInALenientBlockIsAWarning) {
  for (const std::string block :
       {R"("tain_batch_size": 8)", R"("activation_checkpointing": {"partition_activation": true})",
        R"("flops_profiler": {"enabeld": false})", R"("checkpoint": {"tag_validaton": "Warn"})",
        R"("aio": {"block_sise": 1048576})",
        R"("optimizer": {"type": "AdamW", "params": {"lr": 0.001, "weight_decya": 0.1}})",
        R"("scheduler": {"type": "WarmupLR", "params": {"warmup_num_step": 100}})"}) {
    const auto result = check(clean_config(block));
    const Diagnostic* d = find_code(result, "unknown-key");
    ASSERT_NE(d, nullptr) << block;
    EXPECT_EQ(d->severity, Severity::kWarning) << block;
    EXPECT_NE(d->hint.find("did you mean"), std::string::npos) << block << ": " << d->hint;
  }
}

TEST(KeyRules, KnownKeysAndAliasesAreNotReported) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 3, "prefetch_bucket_size": 1000,
    "stage3_max_live_parameters": 1e9, "overlap_comm": true},
    "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": false})"));
  EXPECT_EQ(find_code(result, "unknown-key"), nullptr) << dump(result);
  EXPECT_EQ(result.config->zero.prefetch_bucket_size, 1000);
  EXPECT_EQ(result.config->zero.max_live_parameters, 1000000000);
}

TEST(KeyRules, BothAliasAndNameIsAWarning) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 3,
    "prefetch_bucket_size": 1000, "stage3_prefetch_bucket_size": 2000})"));
  EXPECT_TRUE(has(result, "duplicate-alias", Severity::kWarning)) << dump(result);
}

TEST(KeyRules, StaleSpellingsGetTheRealKeyAsHint) {
  const auto result = check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true, "check_overflow": true})"));
  const Diagnostic* d = find_code(result, "unknown-key");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->hint.find("check_grad_overflow"), std::string::npos);
}

TEST(KeyRules, WrongTypesAreErrors) {
  for (const std::string block :
       {R"("zero_optimization": {"stage": "three"})", R"("fp16": {"enabled": "yes"})",
        R"("zero_optimization": {"stage": 2, "reduce_bucket_size": 1.5})", R"("steps_per_print": [10])",
        R"("fp16": true)", R"("optimizer": {"type": "AdamW", "params": {"lr": "fast"}})",
        R"("optimizer": {"type": "AdamW", "params": {"betas": [0.9]}})"}) {
    const auto result = check(clean_config(block));
    EXPECT_TRUE(has(result, "wrong-type", Severity::kError)) << block << "\n" << dump(result);
  }
  // Integral floats are ints to pydantic: 5e8 is fine for an element count.
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 5e8})")),
                   "wrong-type", Severity::kError));
}

TEST(KeyRules, PydanticCoercionsAreWarnings) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": "3"}, "bf16": {"enabled": 1, "check_grad_overflow": true})"));
  EXPECT_TRUE(has(result, "type-coerced", Severity::kWarning)) << dump(result);
  EXPECT_FALSE(has(result, "wrong-type", Severity::kError));
  EXPECT_EQ(result.config->zero.stage, 3);
  EXPECT_TRUE(result.config->bf16.enabled);
}

TEST(KeyRules, OutOfRangeValues) {
  const auto stage = check(clean_config(R"("zero_optimization": {"stage": 4})"));
  const Diagnostic* d = find_code(stage, "out-of-range");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("Maximum supported ZeRO stage is 3"), std::string::npos);
  EXPECT_TRUE(has(check(clean_config(R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true, "ratio": 1.5}})")),
                  "out-of-range", Severity::kError));
  EXPECT_TRUE(has(check(clean_config(R"("zero_optimization": {"stage": 2, "reduce_bucket_size": -1})")),
                  "out-of-range", Severity::kError));
  EXPECT_TRUE(has(check(R"({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": -1.0})"),
                  "out-of-range", Severity::kError));
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 3, "overlap_comm": true})")),
                   "out-of-range", Severity::kError));
}

TEST(KeyRules, InvalidChoicesUseDeepSpeedsMessages) {
  const auto op = check(clean_config(R"("gradient_allreduce_op": "avg")"));
  ASSERT_TRUE(has(op, "invalid-value", Severity::kError));
  EXPECT_EQ(find_code(op, "invalid-value")->message,
            "Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: 'avg'");
  const auto dtype = check(clean_config(R"("communication_data_type": "fp8")"));
  EXPECT_EQ(find_code(dtype, "invalid-value")->message,
            "Invalid communication_data_type. Supported data types: ['fp16', 'bf16', 'fp32']. Got: fp8");
  const auto tag = check(clean_config(R"("checkpoint": {"tag_validation": "Strict"})"));
  EXPECT_NE(find_code(tag, "invalid-value")->message.find("expecting one of ['WARN', 'IGNORE', 'FAIL']"), std::string::npos);
  const auto device = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "cuda", "pin_memory": true}})"));
  EXPECT_TRUE(has(device, "invalid-value", Severity::kError));
  // tag_validation is case-insensitive in DeepSpeed.
  EXPECT_FALSE(has(check(clean_config(R"("checkpoint": {"tag_validation": "FAIL"})")), "invalid-value", Severity::kError));
}

TEST(KeyRules, RemovedFeaturesNameTheReplacement) {
  struct Case { const char* block; const char* path; const char* replacement; };
  const Case cases[] = {
      {R"("nebula": {"enabled": true})", "nebula", "checkpoint"},
      {R"("compression_training": {})", "compression_training", "external quantization toolkit"},
      {R"("quantize_training": {"enabled": true})", "quantize_training", "external quantization toolkit"},
      {R"("sparse_attention": {"mode": "fixed"})", "sparse_attention", "attention"},
      {R"("zero_optimization": {"stage": 3, "mics_shard_size": 8})", "zero_optimization.mics_shard_size", "zero_hpz_partition_size"},
      {R"("optimizer": {"type": "OneBitAdam", "params": {"lr": 0.001}})", "optimizer.type", "ZeRO++"},
      {R"("optimizer": {"type": "ZeroOneAdam"})", "optimizer.type", "AdamW"},
      {R"("optimizer": {"type": "OneBitLamb"})", "optimizer.type", "AdamW"},
  };
  for (const auto& c : cases) {
    const auto result = check(clean_config(c.block));
    const Diagnostic* d = find_code_at(result, "removed-feature", c.path);
    ASSERT_NE(d, nullptr) << c.block << "\n" << dump(result);
    EXPECT_EQ(d->severity, Severity::kError);
    EXPECT_NE(d->message.find("removed"), std::string::npos) << d->message;
    EXPECT_NE(d->hint.find(c.replacement), std::string::npos) << d->hint;
    EXPECT_FALSE(has(result, "unknown-optimizer", Severity::kError));
  }
  EXPECT_EQ(find_code(check(clean_config(R"("optimizer": {"type": "Adam"})")), "removed-feature"), nullptr);
}

TEST(KeyRules, DeprecatedKeysAreMigratedWithAWarning) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "cpu_offload": true})"));
  const Diagnostic* d = find_code(result, "deprecated-key");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "Config parameter cpu_offload is deprecated use offload_optimizer instead");
  EXPECT_EQ(result.config->zero.offload_optimizer.device, OffloadDevice::kCpu);
  const auto param = check(clean_config(R"("zero_optimization": {"stage": 3, "cpu_offload_param": true})"));
  EXPECT_EQ(param.config->zero.offload_param.device, OffloadDevice::kCpu);
  const auto gather = check(clean_config(R"("zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true})"));
  EXPECT_TRUE(has(gather, "deprecated-key", Severity::kWarning));
  EXPECT_TRUE(gather.config->zero.gather_16bit_weights_on_model_save);
  const auto legacy = check(clean_config(R"("zero_optimization": true)"));
  EXPECT_TRUE(has(legacy, "deprecated-key", Severity::kWarning));
  EXPECT_EQ(legacy.config->zero.stage, 1);
  const auto bfloat16 = check(clean_config(R"("bfloat16": {"enabled": true, "check_grad_overflow": true})"));
  EXPECT_TRUE(has(bfloat16, "deprecated-key", Severity::kWarning));
  EXPECT_TRUE(bfloat16.config->bf16.enabled);
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "cpu", "pin_memory": true}})")),
                   "deprecated-key", Severity::kWarning));
}

TEST(KeyRules, DeprecatedAndReplacementTogetherIsDeepSpeedsAssertion) {
  const auto result = check(clean_config(R"("zero_optimization": {"stage": 2, "cpu_offload": true,
    "offload_optimizer": {"device": "cpu"}})"));
  const Diagnostic* d = find_code(result, "deprecated-conflict");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "Cannot provide deprecated parameter 'cpu_offload' and replacing parameter "
                        "'offload_optimizer' together");
}

TEST(KeyRules, ScheduledForRemovalBlocksWarn) {
  for (const std::string block : {R"("amp": {"enabled": false})", R"("progressive_layer_drop": {"enabled": false})",
                                  R"("sparse_gradients": false)",
                                  R"("zero_optimization": {"stage": 3, "zeropp_loco_param": {"err_beta": 0.8}})"}) {
    EXPECT_TRUE(has(check(clean_config(block)), "deprecated-key", Severity::kWarning)) << block;
  }
}

}  // namespace
}  // namespace shardscope::configs
