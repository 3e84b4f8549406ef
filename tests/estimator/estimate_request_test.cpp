// The request both front ends build: unset fields keep EstimateOptions' defaults or the config's
// values, set ones override them, bad combinations name the flag, and the argument list is the
// flags of exactly the fields that are set.
#include <gtest/gtest.h>

#include "estimator/byte_units.hpp"
#include "estimator/estimate_request.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::estimator {
namespace {

const std::string kLlama = std::string(SHARDSCOPE_TEST_DATA_DIR) + "/hf/llama-2-7b.json";
const std::string kZero3Offload = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates/zero3_cpu_offload.json";

TEST(EstimateRequest, AnEmptyRequestKeepsEveryDefault) {
  const EstimateOptions o = estimate_request_options(EstimateRequest{});
  const EstimateOptions d;
  EXPECT_EQ(o.cluster.gpus_per_node, d.cluster.gpus_per_node);
  EXPECT_EQ(o.cluster.nodes, d.cluster.nodes);
  EXPECT_FALSE(o.cluster.gpu_memory_bytes.has_value());
  EXPECT_EQ(o.cluster.margin, d.cluster.margin);
  EXPECT_EQ(o.workload.micro_batch, d.workload.micro_batch);
  EXPECT_EQ(o.workload.seq_len, 0);  // the model's maximum
  EXPECT_EQ(o.precision.precision, d.precision.precision);
  EXPECT_EQ(o.precision.optimizer, d.precision.optimizer);
  EXPECT_EQ(o.buckets.reduce_bucket_size, d.buckets.reduce_bucket_size);
  EXPECT_EQ(o.deepspeed_buffer_factor, d.deepspeed_buffer_factor);
  EXPECT_FALSE(o.requested_plan.has_value());
  EXPECT_TRUE(estimate_request_arguments(EstimateRequest{}).empty());
}

TEST(EstimateRequest, TheConfigFirstThenTheFlags) {
  EstimateRequest r;
  r.config = kZero3Offload;
  r.gpus_per_node = 8;
  EstimateOptions o = estimate_request_options(r);
  ASSERT_TRUE(o.requested_plan.has_value());
  EXPECT_EQ(o.requested_plan->stage, 3);
  EXPECT_EQ(o.requested_plan->offload_param, OffloadDevice::kCpu);
  r.offload_param = OffloadDevice::kNone;  // --offload-param none over the config's cpu
  r.micro_batch = 3;
  o = estimate_request_options(r);
  EXPECT_EQ(o.requested_plan->stage, 3);
  EXPECT_EQ(o.requested_plan->offload_param, OffloadDevice::kNone);
  EXPECT_EQ(o.workload.micro_batch, 3);
}

TEST(EstimateRequest, BadCombinationsNameTheFlag) {
  auto message = [](const EstimateRequest& r) {
    try {
      estimate_request(r);
    } catch (const EstimatorError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EstimateRequest r;
  r.params = 7e9;
  r.offload_optimizer = OffloadDevice::kCpu;
  EXPECT_NE(message(r).find("--offload-optimizer and --offload-param need --stage"), std::string::npos) << message(r);
  r = {};
  r.params = 7e9;
  r.gpu = "H100-80GB";
  r.gpu_memory_bytes = 80 * kGiB;
  EXPECT_NE(message(r).find("give --gpu or --gpu-mem, not both"), std::string::npos);
  r = {};
  r.source = ModelSource::kShape;
  r.layers = 2;
  r.hidden = 64;
  r.heads = 2;
  EXPECT_NE(message(r).find("needs --vocab"), std::string::npos) << message(r);
  r = {};
  r.params = 7e9;
  r.micro_batch = 0;
  EXPECT_NE(message(r).find("--micro-batch must be positive"), std::string::npos);
  r = {};
  EXPECT_NE(message(r).find("--params"), std::string::npos) << message(r);
}

TEST(EstimateRequest, ArgumentsAreTheSetFlags) {
  EstimateRequest r;
  r.source = ModelSource::kHfConfig;
  r.hf_config = kLlama;
  r.gpus_per_node = 8;
  r.gpu = "H100-80GB";
  r.margin = 0.15;
  r.inter_node_bandwidth = 25e9;
  r.checkpointing = ActivationCheckpointing::kFull;
  r.flash_attention = true;
  r.stage = 2;
  const std::vector<std::string> expected = {
      "--hf-config", kLlama, "--stage", "2", "--gpus-per-node", "8", "--checkpointing", "full", "--flash-attention",
      "--gpu", "H100-80GB", "--margin", "0.15", "--inter-node-bandwidth", "25GB/s"};
  EXPECT_EQ(estimate_request_arguments(r), expected);
  // Llama-2-7B with no --seq-len takes its max_position_embeddings (4096), as the CLI does.
  const Estimate e = estimate_request(r);
  EXPECT_EQ(e.activations.seq_len, 4096);
  EXPECT_DOUBLE_EQ(*e.options.cluster.gpu_memory_bytes, require_gpu("H100-80GB", "t").memory_bytes);
}

}  // namespace
}  // namespace shardscope::estimator
