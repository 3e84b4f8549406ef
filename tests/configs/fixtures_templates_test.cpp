// Real configs of the kinds found in public repositories, and the shipped templates.
#include <gtest/gtest.h>

#include <filesystem>

#include "config_test_util.hpp"

namespace shardscope::configs {
namespace {
using namespace testing;

ValidationResult check_file(const std::string& path, ValidateOptions options = {}) {
  return validate(parse_config_file(path), options);
}

std::string data(const char* name) { return std::string(SHARDSCOPE_TEST_DATA_DIR) + "/" + name; }

std::size_t count(const ValidationResult& result, const std::string& code) {
  std::size_t n = 0;
  for (const auto& d : result.diagnostics) n += d.code == code;
  return n;
}

TEST(Templates, EveryTemplateValidatesCleanEvenUnderStrict) {
  const std::string dir = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates";
  int templates = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++templates;
    ValidateOptions options;
    options.strict = true;
    options.world_size = 8;
    const auto result = check_file(entry.path().string(), options);
    EXPECT_EQ(count_severity(result.diagnostics, Severity::kError), 0u) << entry.path() << "\n" << dump(result);
    EXPECT_EQ(count_severity(result.diagnostics, Severity::kWarning), 0u) << entry.path() << "\n" << dump(result);
    EXPECT_TRUE(result.config->batch.resolved) << entry.path();
  }
  EXPECT_GE(templates, 5);
}

TEST(Templates, TemplatesSayWhatTheirNamesSay) {
  const std::string dir = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates/";
  const auto z2 = check_file(dir + "zero2_bf16.json");
  EXPECT_EQ(z2.config->zero.stage, 2);
  EXPECT_EQ(z2.config->precision(), PrecisionMode::kBf16);
  const auto z3 = check_file(dir + "zero3.json");
  EXPECT_EQ(z3.config->zero.stage, 3);
  const auto z2o = check_file(dir + "zero2_cpu_offload.json");
  EXPECT_EQ(z2o.config->zero.offload_optimizer.device, OffloadDevice::kCpu);
  EXPECT_EQ(z2o.config->zero.offload_param.device, OffloadDevice::kNone);
  const auto z3o = check_file(dir + "zero3_cpu_offload.json");
  EXPECT_EQ(z3o.config->zero.offload_param.device, OffloadDevice::kCpu);
  EXPECT_EQ(z3o.config->zero.offload_optimizer.device, OffloadDevice::kCpu);
  const auto fp16 = check_file(dir + "zero2_fp16.json");
  EXPECT_EQ(fp16.config->precision(), PrecisionMode::kFp16);
  EXPECT_EQ(fp16.config->fp16.loss_scale, 0.0);
}

TEST(Fixtures, HuggingFaceZero3AutoConfigReadDirectlyFailsAsDeepSpeedDoes) {
  const auto result = check_file(data("hf_zero3_auto.json"));
  // Errors (DeepSpeed keeps the string and fails on it): the batch keys' one TypeError,
  // gradient_clipping, 4 optimizer params, 3 scheduler params. Warnings (pydantic drops "auto"):
  // fp16.enabled and 3 zero_optimization sizes.
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kError), 9u) << dump(result);
  EXPECT_EQ(count(result, "unfilled-auto"), 13u) << dump(result);
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kWarning), 4u) << dump(result);
  EXPECT_EQ(result.config->zero.offload_param.device, OffloadDevice::kCpu);
  EXPECT_EQ(result.config->zero.max_live_parameters, 1000000000);
}

TEST(Fixtures, HuggingFaceConfigFilledWithSetIsClean) {
  ValidateOptions options;
  options.world_size = 4;
  for (const char* set : {"train_batch_size=64", "train_micro_batch_size_per_gpu=4",
                          "gradient_accumulation_steps=4", "gradient_clipping=1.0", "fp16.enabled=true",
                          "optimizer.params.lr=5e-5", "optimizer.params.betas=[0.9,0.999]",
                          "optimizer.params.eps=1e-8", "optimizer.params.weight_decay=0.0",
                          "scheduler.params.warmup_min_lr=0", "scheduler.params.warmup_max_lr=5e-5",
                          "scheduler.params.warmup_num_steps=500",
                          "zero_optimization.reduce_bucket_size=16777216",
                          "zero_optimization.stage3_prefetch_bucket_size=15099494",
                          "zero_optimization.stage3_param_persistence_threshold=40960"})
    options.overrides.push_back(parse_override(set));
  const auto result = check_file(data("hf_zero3_auto.json"), options);
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kError), 0u) << dump(result);
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kWarning), 0u) << dump(result);
  EXPECT_TRUE(result.config->fp16.enabled);
  EXPECT_EQ(result.config->zero.prefetch_bucket_size, 15099494);
  EXPECT_TRUE(result.config->batch.resolved);
}

TEST(Fixtures, HuggingFaceZero2AutoConfig) {
  const auto result = check_file(data("hf_zero2_auto.json"));
  // The batch keys' TypeError, gradient_clipping, 4 optimizer and 3 scheduler params; fp16.enabled.
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kError), 9u) << dump(result);
  EXPECT_EQ(count(result, "unfilled-auto"), 10u) << dump(result);
  EXPECT_EQ(result.config->zero.allgather_bucket_size, 200000000);
  EXPECT_TRUE(result.config->zero.overlap_comm);
}

TEST(Fixtures, Stage3NvmeOffloadWithHjsonSyntax) {
  ValidateOptions options;
  options.world_size = 8;
  const auto result = check_file(data("stage3_nvme_offload.json"), options);
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kError), 0u) << dump(result);
  EXPECT_EQ(result.config->batch.gradient_accumulation_steps, 4);  // 64 // 2 // 8
  EXPECT_EQ(result.config->zero.offload_param.device, OffloadDevice::kNvme);
  EXPECT_EQ(result.config->zero.offload_optimizer.nvme_path.value_or(""), "/local_nvme");
  EXPECT_EQ(count_severity(result.diagnostics, Severity::kNote), 0u);  // comments noted only in strict
  options.strict = true;
  const auto strict = check_file(data("stage3_nvme_offload.json"), options);
  EXPECT_EQ(count(strict, "json-comment"), 1u);
  EXPECT_EQ(count(strict, "trailing-comma"), 2u);
}

TEST(Fixtures, OldConfigWithRemovedBlocksFailsNamingEachFeature) {
  const auto result = check_file(data("old_removed_blocks.json"));
  EXPECT_EQ(count(result, "removed-feature"), 3u) << dump(result);
  EXPECT_NE(find_code_at(result, "removed-feature", "optimizer.type"), nullptr);
  EXPECT_NE(find_code_at(result, "removed-feature", "sparse_attention"), nullptr);
  EXPECT_NE(find_code_at(result, "removed-feature", "compression_training"), nullptr);
  EXPECT_NE(find_code_at(result, "deprecated-key", "zero_optimization.cpu_offload"), nullptr);
  EXPECT_EQ(find_code_at(result, "removed-feature", "optimizer.type")->location.line, 6);
}

}  // namespace
}  // namespace shardscope::configs
