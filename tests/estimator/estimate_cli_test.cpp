// `shardscope estimate` run as a process: tables, JSON, exit codes and error messages.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli_process.hpp"

namespace shardscope::estimator {
namespace {

using shardscope::testing::run_cli;

std::string fixture(const std::string& name) { return std::string(SHARDSCOPE_TEST_DATA_DIR) + "/hf/" + name; }

TEST(EstimateCli, SevenBillionTableInGB) {
  const auto r = run_cli({"estimate", "--params", "7e9", "--largest-layer", "131M", "--gpus-per-node", "8",
                          "--gpu-mem", "80GiB", "--units", "GB"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Sizes in GB (1e9 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("38.50"), std::string::npos);
  EXPECT_NE(r.out.find("26.25"), std::string::npos);
  EXPECT_NE(r.out.find("2 + 14/N B/param"), std::string::npos);
  const auto stage1 = r.out.find("\nstage 1 ");
  ASSERT_NE(stage1, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(stage1, r.out.find('\n', stage1 + 1) - stage1).find("4 + 12/N"), 31u) << r.out;
  EXPECT_NE(r.out.find("<- recommended"), std::string::npos);
  EXPECT_NE(r.out.find("offload_param=cpu , offload_optimizer=cpu , zero_init=1"), std::string::npos);
}

TEST(EstimateCli, JsonDocument) {
  const auto r = run_cli({"estimate", "--params", "7B", "--largest-layer", "131M", "--gpus-per-node", "8", "--gpu",
                          "H100-80GB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "shardscope.estimate/1");
  EXPECT_DOUBLE_EQ(j["plans"][3]["model_states"]["gpu"]["total_bytes"].get<double>(), 14e9);
  EXPECT_EQ(j["verdict"]["recommended"]["stage"], 1);
  EXPECT_EQ(j["options"]["gpu_name"], "H100-80GB");
  // One node with a catalog GPU: communication time at its NVLink bandwidth.
  EXPECT_DOUBLE_EQ(j["plans"][0]["communication"]["bandwidth_bytes_per_s"].get<double>(), 450e9);
  EXPECT_DOUBLE_EQ(j["plans"][0]["communication"]["bytes_per_gpu_per_step"].get<double>(), 2 * 7.0 / 8 * 14e9);
}

TEST(EstimateCli, HfConfigWithActivationsAndExplain) {
  const auto r = run_cli({"estimate", "--hf-config", fixture("llama-2-7b.json"), "--gpus-per-node", "8", "--gpu",
                          "A100-80GB", "--micro-batch", "2", "--seq-len", "2048", "--checkpointing", "full", "--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("6738415616"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sequence 2048"), std::string::npos);
  EXPECT_NE(r.out.find("How each number is computed"), std::string::npos);
  EXPECT_NE(r.out.find("layer inputs"), std::string::npos);
}

TEST(EstimateCli, NothingFitsExitsOne) {
  // 70B on 8 x 80 GiB with 64 GiB of host memory: stage 3 needs 140e9 per GPU, every offload needs
  // more host memory than 57.6 GiB. Stage 3 alone would need ceil(16 x 70e9 / (77.3e9 - 5e9)) = 16 GPUs.
  const auto r = run_cli({"estimate", "--params", "70B", "--largest-layer", "1B", "--gpus-per-node", "8", "--gpu-mem",
                          "80GiB", "--cpu-mem", "64GiB"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("Nothing fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs at least 16 GPUs of this size (2 node(s) of 8)"), std::string::npos) << r.out;
}

TEST(EstimateCli, SeventyBillionOnOneGpuIsBuiltWholeFirst) {
  // ZeRO-Infinity's claim is a 70B model on one GPU with parameters and optimizer on NVMe. The
  // engine at one rank builds the model whole in fp32 on the GPU before it offloads it (measured on
  // the held sweep, docs/estimator.md), so the estimate says no, and says why.
  const auto r = run_cli({"estimate", "--params", "70B", "--largest-layer", "1B", "--gpu-mem", "24GiB", "--cpu-mem",
                          "64GiB"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("Nothing fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Its peak is the start of the run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations are not counted"), std::string::npos) << r.out;
}

TEST(EstimateCli, ConfigPlanIsJudged) {
  const auto path = std::filesystem::temp_directory_path() / "shardscope_est_cli_ds.json";
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                            "zero_optimization": {"stage": 1}})";
  const auto r = run_cli({"estimate", "--params", "7B", "--largest-layer", "131M", "--gpus-per-node", "8", "--gpu-mem",
                          "40GiB", "--config", path.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("(requested)"), std::string::npos) << r.out;
  // Stage 2 would fit its step, not its start (the fp32 model built whole, 6 B/param): stage 3.
  EXPECT_NE(r.out.find("switch to ZeRO stage 3"), std::string::npos) << r.out;
  std::filesystem::remove(path);
}

TEST(EstimateCli, SafetensorsCountsWithConfigShape) {
  // One BF16 tensor of 4 x 8 = 32 elements: 8-byte length, JSON header, 64 bytes of data.
  const std::string header = R"({"w.weight": {"dtype": "BF16", "shape": [4, 8], "data_offsets": [0, 64]}})";
  const auto path = std::filesystem::temp_directory_path() / "shardscope_est_cli.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    out << header << std::string(64, '\0');
  }
  const auto r = run_cli({"estimate", "--safetensors", path.string(), "--hf-config", fixture("gpt2.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["total_params"], 32);
  EXPECT_EQ(j["model"]["params_by_dtype"]["BF16"], 32);
  EXPECT_TRUE(j["activations"]["available"].get<bool>());
  EXPECT_EQ(j["activations"]["seq_len"], 1024);
  std::filesystem::remove(path);
}

TEST(EstimateCli, UsageErrors) {
  auto r = run_cli({"estimate", "--params", "7B", "--gpu-memm", "80GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean '--gpu-mem'"), std::string::npos) << r.err;
  r = run_cli({"estimate", "--params", "7B", "--hf-config", fixture("gpt2.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exactly one of"), std::string::npos) << r.err;
  r = run_cli({"estimate", "--params", "7B", "--gpu", "H10"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown GPU 'H10'"), std::string::npos) << r.err;
  r = run_cli({"estimate", "--hf-config", "/nonexistent/config.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/config.json"), std::string::npos) << r.err;
  r = run_cli({"estimate", "--params", "7B", "--stage", "2", "--offload-param", "cpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("offload_param works with ZeRO stage 3 only"), std::string::npos) << r.err;
  r = run_cli({"estimate", "--params", "7B", "--gpu-mem", "80 bananas"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpu-mem"), std::string::npos) << r.err;
}

TEST(EstimateCli, ListGpusAndHelp) {
  const auto r = run_cli({"estimate", "--list-gpus"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("H200"), std::string::npos);
  EXPECT_NE(r.out.find("141 GB"), std::string::npos);
  EXPECT_NE(r.out.find("  989.4 TFLOP/s  SXM5"), std::string::npos) << r.out;  // H200's dense bf16 peak
  const auto top = run_cli({"--help"});
  EXPECT_NE(top.out.find("estimate"), std::string::npos);
}

// Issue 22's campaign: the estimate printed "-9223372036854775808M total params" and exited 0.
TEST(EstimateCli, AShapeBeyondAnyModelIsRefusedNotPrintedAsANegativeCount) {
  const std::string path = std::filesystem::temp_directory_path() / "shardscope_huge_config.json";
  std::ofstream(path) << R"({"model_type": "llama", "hidden_size": 2147483647, "num_hidden_layers": 2147483647,
      "num_attention_heads": 1, "intermediate_size": 2147483647, "vocab_size": 2147483647,
      "max_position_embeddings": 4096})";
  const auto r = run_cli({"estimate", "--hf-config", path});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.find("-9223372036854775808"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the estimator accepts"), std::string::npos) << r.err;
  std::filesystem::remove(path);
}

TEST(EstimateCli, FilesThatAreNotFilesExit2NamingThem) {
  for (const auto& flag : {"--hf-config", "--safetensors"}) {
    const auto dev = run_cli({"estimate", flag, "/dev/zero"});
    EXPECT_EQ(dev.exit_code, 2) << flag;
    EXPECT_NE(dev.err.find("/dev/zero: is a character device"), std::string::npos) << dev.err;
    const auto dir = run_cli({"estimate", flag, "/tmp"});
    EXPECT_EQ(dir.exit_code, 2) << flag;
    EXPECT_NE(dir.err.find("/tmp: is a directory"), std::string::npos) << dir.err;
  }
}

// Issue 31: a model_type holding an escape sequence reached the terminal raw in the error.
TEST(EstimateCli, AModelTypeFromTheFileIsShownEscapedAndCut) {
  const std::string path = std::filesystem::temp_directory_path() / "shardscope_escape_config.json";
  std::ofstream(path) << "{\"model_type\": \"x\\u001b[2J\\u001b]0;owned\\u0007" << std::string(100000, 'y')
                      << "\"}";
  const auto r = run_cli({"estimate", "--hf-config", path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
  EXPECT_EQ(r.err.find('\x07'), std::string::npos);
  EXPECT_NE(r.err.find("x\\x1b[2J\\x1b]0;owned\\x07yyy"), std::string::npos) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("bytes of this line left out"), std::string::npos) << r.err.substr(0, 400);
  EXPECT_LT(r.err.size(), 2000u);
  std::filesystem::remove(path);
}

// --deepspeed-version judges --config as that release does: an "amp" block is only deprecated in
// 0.19.7 and rejected at parse by 0.19.8 (docs/configs.md, "DeepSpeed versions").
TEST(EstimateCli, DeepSpeedVersionChoosesTheRulesThatJudgeTheConfig) {
  const std::string amp = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/configs/data/versions/amp_disabled_block.json";
  const std::vector<std::string> base{"estimate", "--params", "1B", "--gpu-mem", "80GiB", "--config", amp};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  auto r = with({"--deepspeed-version", "0.19.7"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("rules: DeepSpeed 0.19.7 rules (--deepspeed-version)\n", 0), 0u) << r.out;

  r = with({"--deepspeed-version", "0.19.8"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("rules: DeepSpeed 0.19.8 rules (--deepspeed-version)\n", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("DeepSpeed 0.19.8 would reject this config"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NVIDIA Apex AMP integration has been removed"), std::string::npos) << r.err;

  r = with({"--deepspeed-version", "0.19.7", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deepspeed_version"], "0.19.7");
  EXPECT_EQ(j["deepspeed_rules"], "DeepSpeed 0.19.7 rules (--deepspeed-version)");

  r = with({"--deepspeed-version", "0.18.0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("0.19.7, 0.19.8"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("rules:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace shardscope::estimator
