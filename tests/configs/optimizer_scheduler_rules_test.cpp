// Optimizer and scheduler blocks: names, defaults, and the engine's start-up errors.
#include <gtest/gtest.h>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

TEST(OptimizerRules, NativeNamesMatchCaseInsensitivelyTorchNamesExactly) {
  const auto adamw = check(clean_config(R"("optimizer": {"type": "adamw", "params": {"lr": 0.0002}})"));
  EXPECT_EQ(adamw.config->optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_DOUBLE_EQ(adamw.config->optimizer.lr, 2e-4);
  EXPECT_DOUBLE_EQ(adamw.config->optimizer.beta2, 0.999);  // FusedAdam default
  EXPECT_DOUBLE_EQ(adamw.config->optimizer.eps, 1e-8);
  EXPECT_EQ(check(clean_config(R"("optimizer": {"type": "RMSprop"})")).config->optimizer.kind, OptimizerKind::kTorch);
  const auto bad = check(clean_config(R"("optimizer": {"type": "rmsprop"})"));
  const Diagnostic* d = find_code(bad, "unknown-optimizer");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "rmsprop is not a supported DeepSpeed Optimizer");
  EXPECT_NE(d->hint.find("RMSprop"), std::string::npos);
}

TEST(OptimizerRules, MaxGradNormInParamsIsRejected) {
  const auto bad = check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}})"));
  const Diagnostic* d = find_code(bad, "optimizer-max-grad-norm");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("'max_grad_norm' is not supported as an optimizer parameter"), std::string::npos);
  EXPECT_EQ(find_code(check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"lr": 1.0}})")),
                      "optimizer-max-grad-norm"), nullptr);
}

TEST(OptimizerRules, UntestedOptimizerWithZero) {
  const auto bad = check(clean_config(R"("optimizer": {"type": "SGD", "params": {"lr": 0.1}},
    "zero_optimization": {"stage": 2, "overlap_comm": true})"));
  const Diagnostic* d = find_code(bad, "untested-optimizer");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->message.find("\"zero_allow_untested_optimizer\": true"), std::string::npos);
  const auto allowed = check(clean_config(R"("optimizer": {"type": "SGD"}, "zero_allow_untested_optimizer": true,
    "zero_optimization": {"stage": 2, "overlap_comm": true})"));
  EXPECT_TRUE(has(allowed, "untested-optimizer", Severity::kWarning));
  EXPECT_FALSE(has(allowed, "untested-optimizer", Severity::kError));
  EXPECT_EQ(find_code(check(clean_config(R"("optimizer": {"type": "SGD"})")), "untested-optimizer"), nullptr);
  EXPECT_EQ(find_code(check(clean_config(R"("optimizer": {"type": "Lion"}, "zero_optimization": {"stage": 3})")),
                      "untested-optimizer"), nullptr);
  // FusedLamb is not in ZERO_SUPPORTED_OPTIMIZERS.
  EXPECT_TRUE(has(check(clean_config(R"("optimizer": {"type": "Lamb"}, "zero_optimization": {"stage": 1})")),
                  "untested-optimizer", Severity::kError));
}

TEST(OptimizerRules, AdamRunsAdamWUnlessTold) {
  EXPECT_TRUE(has(check(clean_config(R"("optimizer": {"type": "Adam", "params": {"weight_decay": 0.1}})")),
                  "adam-runs-adamw", Severity::kWarning));
  EXPECT_FALSE(has(check(clean_config(R"("optimizer": {"type": "Adam", "params": {"weight_decay": 0.1, "adam_w_mode": false}})")),
                   "adam-runs-adamw", Severity::kWarning));
}

TEST(OptimizerRules, LambNeedsDynamicLossScaling) {
  EXPECT_TRUE(has(check(clean_config(R"("optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 1024})")),
                  "lamb-static-loss-scale", Severity::kError));
  EXPECT_FALSE(has(check(clean_config(R"("optimizer": {"type": "Lamb"}, "fp16": {"enabled": true})")),
                   "lamb-static-loss-scale", Severity::kError));
}

TEST(OptimizerRules, AmsgradNeedsTorchAdam) {
  EXPECT_TRUE(has(check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"amsgrad": true}})")),
                  "invalid-value", Severity::kError));
  EXPECT_FALSE(has(check(clean_config(R"("optimizer": {"type": "AdamW", "params": {"amsgrad": true, "torch_adam": true}})")),
                   "invalid-value", Severity::kError));
}

TEST(SchedulerRules, DefaultsAndRequiredParams) {
  const auto ok = check(clean_config(R"("scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 5000}})"));
  EXPECT_EQ(find_code(ok, "missing-param"), nullptr) << dump(ok);
  const auto& s = ok.config->scheduler;
  EXPECT_EQ(s.kind, SchedulerKind::kWarmupDecayLR);
  EXPECT_EQ(s.warmup_num_steps, 1000);
  EXPECT_DOUBLE_EQ(s.warmup_max_lr.value_or(-1), 0.001);
  EXPECT_EQ(s.warmup_type, "log");
  const auto missing = check(clean_config(R"("scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.0001}})"));
  const Diagnostic* d = find_code(missing, "missing-param");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("cycle_max_lr"), std::string::npos);
}

TEST(SchedulerRules, UnknownSchedulerAndTorchFallback) {
  const auto bad = check(clean_config(R"("scheduler": {"type": "WarmupCosine"})"));
  const Diagnostic* d = find_code(bad, "unknown-scheduler");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "DeepSpeed does not recognize LR scheduler WarmupCosine");
  EXPECT_EQ(d->hint, "did you mean \"WarmupCosineLR\"?");
  EXPECT_EQ(find_code(check(clean_config(R"("scheduler": {"type": "StepLR", "params": {"step_size": 10}})")),
                      "unknown-scheduler"), nullptr);
}

TEST(SchedulerRules, WarmupChecks) {
  EXPECT_TRUE(has(check(clean_config(R"("scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}})")),
                  "out-of-range", Severity::kError));
  EXPECT_TRUE(has(check(clean_config(R"("scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}})")),
                  "invalid-value", Severity::kError));
  EXPECT_TRUE(has(check(clean_config(R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 500}})")),
                  "scheduler-total-below-warmup", Severity::kWarning));
  EXPECT_FALSE(has(check(clean_config(R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 5000}})")),
                   "scheduler-total-below-warmup", Severity::kWarning));
}

}  // namespace
}  // namespace shardscope::configs
