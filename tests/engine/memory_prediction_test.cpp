// predict_memory (engine/memory_prediction.hpp) against `shardscope estimate --json` run on the
// same model shape and DeepSpeed config, the MLP's activations against a hand count, and the
// measured-vs-predicted block.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "../app/cli_process.hpp"
#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "engine/memory_prediction.hpp"
#include "estimator/model_states.hpp"
#include "estimator/peak_memory.hpp"
#include "small_model_specs.hpp"
#include "temp_dir.hpp"

namespace shardscope::engine {
namespace {

using testing::small_llama;

using nlohmann::json;

// The same model for the estimator CLI: the llama layout's defaults and these sizes.
const std::vector<std::string> kLlamaFlags = {"--layout", "llama", "--layers", "3", "--hidden", "64", "--heads", "8",
                                              "--kv-heads", "2", "--ffn", "160", "--vocab", "500", "--seq-len", "16",
                                              "--tied-embeddings", "no", "--json"};

std::string write_config(const test::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("ds_config.json");
  std::ofstream(path) << text;
  return path;
}

configs::ResolvedConfig resolve(const std::string& path, int world_size) {
  configs::ValidateOptions options;
  options.world_size = world_size;
  const configs::ValidationResult result = configs::validate(configs::parse_config_file(path), options);
  EXPECT_FALSE(result.has_errors());
  return *result.config;
}

json cli_plan(const std::string& config_path, int gpus, const std::vector<std::string>& extra, json& activations) {
  std::vector<std::string> args = {"estimate", "--config", config_path, "--gpus-per-node", std::to_string(gpus)};
  args.insert(args.end(), kLlamaFlags.begin(), kLlamaFlags.end());
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = testing::run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  activations = j.at("activations");
  for (const auto& plan : j.at("plans"))
    if (json{{"stage", plan.at("stage")}, {"offload_optimizer", plan.at("offload_optimizer")},
             {"offload_param", plan.at("offload_param")}} == j.at("verdict").at("requested"))
      return plan;
  ADD_FAILURE() << "no requested plan in the CLI's estimate";
  return json::object();
}

// train's prediction is `estimate`'s, number for number: the resident states, the buffers, the
// activations, and the allocated, reserved and device-level peaks.
void expect_matches_cli(const MemoryPrediction& p, const json& plan, const json& activations) {
  const json& peak = plan.at("peak");
  EXPECT_DOUBLE_EQ(p.model_states_bytes, peak.at("resident_states_bytes").get<double>());
  EXPECT_DOUBLE_EQ(p.buffers_bytes, peak.at("buffers_bytes").get<double>());
  EXPECT_DOUBLE_EQ(p.buffers_bytes, plan.at("buffers").at("gpu_bytes").get<double>());  // several ranks: all counted
  EXPECT_DOUBLE_EQ(p.activations_bytes, activations.at("total_bytes").get<double>());
  EXPECT_DOUBLE_EQ(p.total_bytes, plan.at("gpu_total_bytes").get<double>());
  EXPECT_DOUBLE_EQ(p.reserved_bytes, peak.at("reserved_bytes").get<double>());
  EXPECT_DOUBLE_EQ(p.device_bytes, peak.at("device_bytes").get<double>());
  EXPECT_GT(p.device_bytes, p.reserved_bytes);
  EXPECT_GE(p.reserved_bytes, p.total_bytes);
  // The peak holds the states, the buffers, cuBLAS's workspaces and at least the activations' phase.
  EXPECT_GE(p.total_bytes + 1, p.model_states_bytes + p.buffers_bytes + estimator::kCublasWorkspaceBytes);
}

TEST(MemoryPrediction, Stage2Bf16MatchesTheEstimatorCli) {
  test::TempDir dir;
  const std::string path = write_config(dir, R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
    "bf16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": 2000000}})");
  const MemoryPrediction p = predict_memory(resolve(path, 2), small_llama(), 2, false);
  json activations;
  const json plan = cli_plan(path, 2, {}, activations);
  EXPECT_EQ(plan.at("stage"), 2);
  expect_matches_cli(p, plan, activations);
  EXPECT_GT(p.activations_bytes, 0);
  EXPECT_NE(p.explanation.find("stage 2"), std::string::npos) << p.explanation;
  EXPECT_NE(p.explanation.find("fused attention"), std::string::npos);
}

TEST(MemoryPrediction, Stage3OffloadWithCheckpointingMatchesTheEstimatorCli) {
  test::TempDir dir;
  const std::string path = write_config(dir, R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "fp16": {"enabled": true}, "optimizer": {"type": "Adam", "params": {"lr": 0.001}},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})");
  const MemoryPrediction with = predict_memory(resolve(path, 4), small_llama(), 4, true);
  json activations;
  const json plan = cli_plan(path, 4, {"--checkpointing", "full"}, activations);
  EXPECT_EQ(plan.at("stage"), 3);
  EXPECT_EQ(plan.at("offload_optimizer"), "cpu");
  expect_matches_cli(with, plan, activations);
  // Checkpointing keeps less: the same run without it predicts more activation memory.
  const MemoryPrediction without = predict_memory(resolve(path, 4), small_llama(), 4, false);
  EXPECT_LT(with.activations_bytes, without.activations_bytes);
  EXPECT_DOUBLE_EQ(with.model_states_bytes, without.model_states_bytes);
}

TEST(MemoryPrediction, MlpStatesFromTheEstimatorActivationsByHand) {
  test::TempDir dir;
  const std::string path = write_config(dir, R"({"train_micro_batch_size_per_gpu": 8,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "zero_optimization": {"stage": 1}})");
  const ModelSpec spec = default_model_spec(ModelKind::kMlp);  // 16 -> 64 -> 64 -> 1, fp32
  const MemoryPrediction p = predict_memory(resolve(path, 2), spec, 2, false);
  const double params = 16 * 64 + 64 + 64 * 64 + 64 + 64 + 1;
  estimator::PrecisionSettings precision;
  precision.precision = estimator::Precision::kFp32;
  estimator::ClusterSettings cluster;
  cluster.gpus_per_node = 2;
  const auto states = estimator::estimate_model_states(params, {1, estimator::OffloadDevice::kNone, estimator::OffloadDevice::kNone},
                                                       precision, cluster);
  // The ZeRO arithmetic, plus the fp32 gradients and reduced copy stage 1 keeps per shard on
  // several ranks (8 B/param / N, engine_zero_states_tests_multirank).
  EXPECT_DOUBLE_EQ(p.model_states_bytes, states.gpu.total() + 8 * params / 2);
  EXPECT_DOUBLE_EQ(p.activations_bytes, 8.0 * (16 + 2 * (64 + 64) + 1) * 4);  // fp32: 4 B per element
  EXPECT_DOUBLE_EQ(p.total_bytes,
                   p.model_states_bytes + p.buffers_bytes + p.activations_bytes + estimator::kCublasWorkspaceBytes);
  EXPECT_THROW(predict_memory(resolve(path, 2), spec, 0, false), std::invalid_argument);
}

TEST(MemoryPrediction, MeasuredVersusPredictedBlock) {
  MemoryPrediction p;
  p.model_states_bytes = 3.0 * (1 << 30);
  p.buffers_bytes = 0.5 * (1 << 30);
  p.activations_bytes = 0.5 * (1 << 30);
  p.total_bytes = 4.0 * (1 << 30);
  const std::string text = measured_vs_predicted_text(p, static_cast<std::int64_t>(4.5 * (1 << 30)));
  EXPECT_EQ(text,
            "Memory per GPU: estimator prediction vs measured peak\n"
            "  model states                3.000 GiB        3072.0 MiB\n"
            "  buffers                     0.500 GiB         512.0 MiB\n"
            "  activations                 0.500 GiB         512.0 MiB\n"
            "  predicted total             4.000 GiB        4096.0 MiB\n"
            "  measured peak               4.500 GiB        4608.0 MiB\n"
            "  difference                 +0.500 GiB        +512.0 MiB  (+12.5% of predicted)\n");
  EXPECT_NE(measured_vs_predicted_text(MemoryPrediction{}, 1024).find("n/a (nothing predicted)"), std::string::npos);
}

// The log line a run keeps its prediction in reads back to the same bytes, also behind a
// launcher's prefix; other lines are not taken for one.
TEST(MemoryPrediction, RecordReadsBackToTheSameBytes) {
  MemoryPrediction p;
  p.model_states_bytes = 21019543552;
  p.buffers_bytes = 1000000000;
  p.activations_bytes = 14612000000;
  p.total_bytes = 36631543552;
  p.reserved_bytes = 38000000000;
  p.device_bytes = 38800000000;
  const std::string record = memory_prediction_record(p);
  EXPECT_EQ(record, "[memory prediction] model_states_bytes=21019543552 buffers_bytes=1000000000 "
                    "activations_bytes=14612000000 total_bytes=36631543552 reserved_bytes=38000000000 "
                    "device_bytes=38800000000");
  for (const std::string& line : {record, "[rank 0] " + record}) {
    const auto back = parse_memory_prediction_record(line);
    ASSERT_TRUE(back) << line;
    EXPECT_EQ(back->model_states_bytes, p.model_states_bytes);
    EXPECT_EQ(back->buffers_bytes, p.buffers_bytes);
    EXPECT_EQ(back->activations_bytes, p.activations_bytes);
    EXPECT_EQ(back->total_bytes, p.total_bytes);
    EXPECT_EQ(back->device_bytes, p.device_bytes);
  }
  EXPECT_FALSE(parse_memory_prediction_record("Memory per GPU: estimator prediction vs measured peak"));
  EXPECT_FALSE(parse_memory_prediction_record("[memory prediction] model_states_bytes=12"));
  EXPECT_FALSE(parse_memory_prediction_record("[memory prediction] model_states_bytes=x buffers_bytes=1 "
                                              "activations_bytes=1 total_bytes=1"));
}

}  // namespace
}  // namespace shardscope::engine
