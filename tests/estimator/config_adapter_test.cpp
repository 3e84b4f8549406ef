// From a DeepSpeed config (through the configs library's resolved model) to EstimateOptions.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "estimator/config_adapter.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

namespace fs = std::filesystem;

std::string write_config(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("shardscope_est_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigAdapter, ResolvedConfigFields) {
  configs::ResolvedConfig c;
  c.fp16.enabled = true;
  c.fp16.fp16_master_weights_and_grads = true;
  c.optimizer.present = true;
  c.optimizer.type = "Lion";
  c.optimizer.kind = configs::OptimizerKind::kLion;
  c.zero.stage = 1;
  c.zero.offload_param.device = configs::OffloadDevice::kCpu;
  c.zero.offload_optimizer.device = configs::OffloadDevice::kCpu;
  c.zero.reduce_bucket_size = 123;
  c.zero.overlap_comm = true;
  c.batch.train_micro_batch_size_per_gpu = 6;
  c.batch.gradient_accumulation_steps = 3;
  EstimateOptions o;
  const auto notes = apply_resolved_config(c, o);
  EXPECT_EQ(o.precision.precision, Precision::kFp16);
  EXPECT_TRUE(o.precision.low_precision_master);
  EXPECT_EQ(o.precision.optimizer_states_per_param, 1);
  ASSERT_TRUE(o.requested_plan.has_value());
  EXPECT_EQ(*o.requested_plan, (ZeroPlan{1, OffloadDevice::kCpu, OffloadDevice::kNone}));
  EXPECT_EQ(o.buckets.reduce_bucket_size, 123);
  EXPECT_EQ(o.buckets.overlap_comm, std::optional<bool>(true));
  EXPECT_EQ(o.workload.micro_batch, 6);
  EXPECT_EQ(o.workload.grad_accum, 3);
  bool noted = false;
  for (const auto& n : notes) noted = noted || n.find("offload_param is ignored") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(ConfigAdapter, MissingOptimizerBlockKeepsDefaultWithNote) {
  configs::ResolvedConfig c;
  c.bf16.enabled = true;
  c.bf16.bf16_master_weights_and_grads = true;
  c.bf16.bf16_optimizer_states = true;
  EstimateOptions o;
  const auto notes = apply_resolved_config(c, o);
  EXPECT_EQ(o.precision.precision, Precision::kBf16);
  EXPECT_TRUE(o.precision.low_precision_optimizer_states);
  EXPECT_EQ(o.precision.optimizer_states_per_param, 2);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("no optimizer block"), std::string::npos);
}

TEST(ConfigAdapter, ReadsAFile) {
  const std::string path = write_config("zero3.json", R"({
    // hjson-style comments are accepted, as DeepSpeed accepts them
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 2,
    "bf16": {"enabled": true},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
    "zero_optimization": {
      "stage": 3,
      "offload_optimizer": {"device": "cpu"},
      "reduce_bucket_size": 2e8,
      "stage3_prefetch_bucket_size": 1e7,
      "stage3_max_live_parameters": 5e8
    }
  })");
  EstimateOptions o;
  o.cluster.gpus_per_node = 8;
  apply_config_file(path, o);
  ASSERT_TRUE(o.requested_plan.has_value());
  EXPECT_EQ(*o.requested_plan, (ZeroPlan{3, OffloadDevice::kCpu, OffloadDevice::kNone}));
  EXPECT_EQ(o.precision.precision, Precision::kBf16);
  EXPECT_EQ(o.workload.micro_batch, 4);
  EXPECT_EQ(o.workload.grad_accum, 2);
  EXPECT_EQ(o.buckets.reduce_bucket_size, 2e8);
  EXPECT_EQ(o.buckets.prefetch_bucket_size, 1e7);
  EXPECT_EQ(o.buckets.max_live_parameters, 5e8);
  EXPECT_EQ(o.buckets.overlap_comm, std::optional<bool>(true));  // stage 3 default
  fs::remove(path);
}

TEST(ConfigAdapter, RejectedConfigNamesTheFile) {
  const std::string path = write_config("bad.json", R"({"zero_optimization": {"stage": 7}})");
  EstimateOptions o;
  try {
    apply_config_file(path, o);
    FAIL() << "expected an error";
  } catch (const EstimatorError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  fs::remove(path);
  EXPECT_THROW(apply_config_file("/nonexistent/ds.json", o), EstimatorError);
}

}  // namespace
}  // namespace shardscope::estimator
