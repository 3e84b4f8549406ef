// ZeRO, offload and precision rules: each with a config that triggers it and one that does not.
#include <gtest/gtest.h>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

TEST(ZeroRules, PartialOffloadNeedsStage3) {
  const auto bad = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true,
    "offload_optimizer": {"device": "cpu", "pin_memory": true, "ratio": 0.3}})"));
  const Diagnostic* d = find_code(bad, "partial-offload-stage");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("Partial offloading only supported for ZeRO Stage 3."), std::string::npos);
  EXPECT_NE(d->message.find("0.3"), std::string::npos);
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "cpu", "pin_memory": true, "ratio": 0.3}})")), "partial-offload-stage"), nullptr);
}

TEST(ZeroRules, NvmeNeedsAPath) {
  const auto bad = check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_param": {"device": "nvme", "pin_memory": true}})"));
  const Diagnostic* d = find_code(bad, "nvme-path-missing");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "\"nvme_path\" in DeepSpeed Config cannot be None if remote device is OffloadDeviceEnum.nvme");
  EXPECT_EQ(d->path, "zero_optimization.offload_param.device");
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_param": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true}})")), "nvme-path-missing"), nullptr);
}

TEST(ZeroRules, OffloadParamBelowStage3IsIgnoredAndSaysSo) {
  const auto bad = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true,
    "offload_param": {"device": "cpu", "pin_memory": true}})"));
  EXPECT_TRUE(has(bad, "offload-param-ignored", Severity::kWarning)) << dump(bad);
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_param": {"device": "cpu", "pin_memory": true}})")), "offload-param-ignored", Severity::kWarning));
}

TEST(ZeroRules, NvmeBelowStage3RunsAsCpuOffloadAndSaysSo) {
  const auto stage2 = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true}})"));
  const Diagnostic* d = find_code(stage2, "nvme-below-stage3");
  ASSERT_NE(d, nullptr) << dump(stage2);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NE(d->message.find("treats every device but \"none\" as CPU offload"), std::string::npos) << d->message;
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true}})")), "nvme-below-stage3"), nullptr);
}

TEST(ZeroRules, SwapSettingsWithoutNvmeDoNothing) {
  const auto cpu = check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "cpu", "pin_memory": true, "pipeline_read": true, "buffer_count": 8},
    "offload_param": {"device": "cpu", "pin_memory": true, "max_in_cpu": 1e8}})"));
  int unused = 0;
  for (const auto& diag : cpu.diagnostics)
    if (diag.code == "nvme-only") ++unused;
  EXPECT_EQ(unused, 3) << dump(cpu);  // pipeline_read, buffer_count, max_in_cpu
  const Diagnostic* d = find_code(cpu, "nvme-only");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->path, "zero_optimization.offload_optimizer.pipeline_read");
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true, "buffer_count": 8},
    "offload_param": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true, "max_in_cpu": 0}})")), "nvme-only"),
            nullptr);
}

TEST(ZeroRules, PipelinedSwappingNeedsDeepSpeedsBufferCount) {
  const auto few = check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true, "pipeline_read": true,
                          "pipeline_write": true, "buffer_count": 8}})"));
  const Diagnostic* d = find_code(few, "swap-buffer-count");
  ASSERT_NE(d, nullptr) << dump(few);
  // AdamW: master, gradient, two moments = 4 buffers, for 3 sub-groups at once.
  EXPECT_NE(d->message.find("holds 4 buffers per sub-group"), std::string::npos) << d->message;
  EXPECT_NE(d->hint.find("set buffer_count to 12"), std::string::npos) << d->hint;
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pin_memory": true, "pipeline_read": true,
                          "buffer_count": 8}})")), "swap-buffer-count"), nullptr);
}

TEST(ZeroRules, OverlapCommOffAtStage2) {
  const auto unset = check(clean_config(R"("zero_optimization": {"stage": 2})"));
  ASSERT_TRUE(has(unset, "overlap-comm-stage2", Severity::kWarning)) << dump(unset);
  EXPECT_FALSE(unset.config->zero.overlap_comm);
  const auto explicit_false = check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": false})"));
  EXPECT_TRUE(has(explicit_false, "overlap-comm-stage2", Severity::kNote));
  EXPECT_FALSE(has(explicit_false, "overlap-comm-stage2", Severity::kWarning));
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true})")),
                      "overlap-comm-stage2"), nullptr);
  EXPECT_EQ(find_code(check(clean_config(R"("zero_optimization": {"stage": 3})")), "overlap-comm-stage2"), nullptr);
}

TEST(ZeroRules, AllreduceSumAtStage3) {
  const auto bad = check(clean_config(R"("gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3})"));
  const Diagnostic* d = find_code(bad, "allreduce-sum-stage3");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "gradient_allreduce_op='sum' is not supported with ZeRO stage 3");
  EXPECT_EQ(find_code(check(clean_config(R"("gradient_allreduce_op": "sum", "zero_optimization": {"stage": 2, "overlap_comm": true})")),
                      "allreduce-sum-stage3"), nullptr);
}

TEST(ZeroRules, LegacyStage1AndElasticCheckpoint) {
  EXPECT_TRUE(has(check(clean_config(R"("zero_optimization": {"stage": 1, "legacy_stage1": true})")),
                  "legacy-stage1", Severity::kError));
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 1, "legacy_stage1": false})")),
                   "legacy-stage1", Severity::kError));
  const auto elastic = check(clean_config(R"("zero_optimization": {"stage": 3, "elastic_checkpoint": true})"));
  const Diagnostic* d = find_code_at(elastic, "deprecated-key", "zero_optimization.elastic_checkpoint");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("Use Universal Checkpointing instead."), std::string::npos);
}

TEST(ZeroRules, ZeroPlusPlusBelowStage3Warns) {
  EXPECT_TRUE(has(check(clean_config(R"("zero_optimization": {"stage": 2, "overlap_comm": true, "zero_hpz_partition_size": 8})")),
                  "stage3-only", Severity::kWarning));
  EXPECT_FALSE(has(check(clean_config(R"("zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8})")),
                   "stage3-only", Severity::kWarning));
}

TEST(PrecisionRules, Fp16WithBf16) {
  const auto bad = check(clean_config(R"("fp16": {"enabled": true}, "bf16": {"enabled": true, "check_grad_overflow": true})"));
  const Diagnostic* d = find_code(bad, "precision-conflict");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "bfloat16 and fp16 modes cannot be simultaneously enabled");
  EXPECT_EQ(find_code(check(clean_config(R"("fp16": {"enabled": false}, "bf16": {"enabled": true, "check_grad_overflow": true})")),
                      "precision-conflict"), nullptr);
}

TEST(PrecisionRules, DynamicLossScalingNeedsPositiveWindowAndMinimum) {
  const auto bad = check(clean_config(R"("fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0, "min_loss_scale": 0})"));
  EXPECT_NE(find_code_at(bad, "out-of-range", "fp16.loss_scale_window"), nullptr) << dump(bad);
  EXPECT_EQ(find_code_at(bad, "out-of-range", "fp16.min_loss_scale")->message,
            "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)");
  // With a static scale the window is unused, so DeepSpeed does not check it.
  EXPECT_FALSE(has(check(clean_config(R"("fp16": {"enabled": true, "loss_scale": 128, "loss_scale_window": 0})")),
                   "out-of-range", Severity::kError));
}

TEST(PrecisionRules, MasterWeightsNeedZero) {
  const auto bad = check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true, "bf16_optimizer_states": true})"));
  EXPECT_NE(find_code_at(bad, "master-weights-stage", "bf16.bf16_optimizer_states"), nullptr);
  EXPECT_EQ(find_code(bad, "bf16-optimizer-states")->message,
            "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.");
  const auto good = check(clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true,
    "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true},
    "zero_optimization": {"stage": 2, "overlap_comm": true})"));
  EXPECT_EQ(find_code(good, "master-weights-stage"), nullptr) << dump(good);
  EXPECT_EQ(find_code(good, "bf16-optimizer-states"), nullptr);
  EXPECT_TRUE(has(check(clean_config(R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})")),
                  "master-weights-stage", Severity::kError));
}

TEST(PrecisionRules, AmpWithZero) {
  const auto bad = check(clean_config(R"("amp": {"enabled": true, "opt_level": "O1"}, "zero_optimization": {"stage": 1})"));
  EXPECT_TRUE(has(bad, "amp-with-zero", Severity::kError));
  EXPECT_FALSE(has(check(clean_config(R"("amp": {"enabled": true, "opt_level": "O1"})")), "amp-with-zero", Severity::kError));
}

}  // namespace
}  // namespace shardscope::configs
