// `shardscope validate` run as a process: exit codes 0/1/2 and the compiler-style output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliRun run_cli(const std::string& arguments) {
  const std::string command = std::string(SHARDSCOPE_CLI_PATH) + " validate " + arguments + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string data(const char* name) { return std::string(SHARDSCOPE_TEST_DATA_DIR) + "/" + name; }

class ValidateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(SHARDSCOPE_CLI_PATH))
      GTEST_SKIP() << "shardscope binary not built at " << SHARDSCOPE_CLI_PATH;
  }
};

TEST_F(ValidateCli, CleanConfigExitsZeroAndSaysOk) {
  const CliRun run = run_cli(data("clean_stage2.json") + " --world-size 8");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("clean_stage2.json: OK"), std::string::npos) << run.output;
}

TEST_F(ValidateCli, WarningsAloneStillExitZero) {
  const CliRun run = run_cli(data("versions/offload_param_stage0.json") + " --world-size 1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find(": warning: "), std::string::npos);
  EXPECT_NE(run.output.find("offload_param_stage0.json: 2 warnings"), std::string::npos) << run.output;
}

TEST_F(ValidateCli, AnAutoConfigReadDirectlyGetsDeepSpeedsVerdictAndTheHfTrainerHint) {
  const CliRun run = run_cli(data("hf_zero3_auto.json") + " --deepspeed-version 0.19.8");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output.rfind("rules: DeepSpeed 0.19.8 rules (--deepspeed-version)\n", 0), 0u) << run.output;
  EXPECT_NE(run.output.find("TypeError: '>' not supported between instances of 'str' and 'int'"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("--hf-trainer"), std::string::npos) << run.output;
  const CliRun unsupported = run_cli(data("clean_stage2.json") + " --deepspeed-version 0.18.0");
  EXPECT_EQ(unsupported.exit_code, 2) << unsupported.output;
  EXPECT_NE(unsupported.output.find("0.19.7, 0.19.8"), std::string::npos) << unsupported.output;
}

TEST_F(ValidateCli, ErrorsExitOneWithFileLineColumnAndHint) {
  const CliRun run = run_cli(data("batch_mismatch.json") + " --world-size 4");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string expected = data("batch_mismatch.json") +
      ":2:3: error: Check batch related parameters. train_batch_size is not equal to "
      "micro_batch_per_gpu * gradient_acc_step * world_size 32 != 4 * 1 * 4 [batch-identity]\n"
      "    hint: ";
  EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
}

TEST_F(ValidateCli, SyntaxErrorExitsOne) {
  const CliRun run = run_cli(data("syntax_error.json"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("syntax_error.json:7:1: error: unexpected end of file, expected '}'"),
            std::string::npos) << run.output;
}

TEST_F(ValidateCli, AnyFileWithErrorsMakesTheExitOne) {
  const CliRun run = run_cli(data("clean_stage2.json") + " " + data("old_removed_blocks.json"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("clean_stage2.json: OK"), std::string::npos);
  EXPECT_NE(run.output.find("old_removed_blocks.json: 3 errors"), std::string::npos) << run.output;
}

TEST_F(ValidateCli, UsageErrorsAndUnreadableFilesExitTwo) {
  EXPECT_EQ(run_cli("").exit_code, 2);
  EXPECT_EQ(run_cli(data("clean_stage2.json") + " --world-sise 4").exit_code, 2);
  EXPECT_EQ(run_cli(data("clean_stage2.json") + " --world-size 0").exit_code, 2);
  EXPECT_EQ(run_cli(data("clean_stage2.json") + " --set novalue").exit_code, 2);
  const CliRun missing = run_cli("/nonexistent/ds.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/nonexistent/ds.json"), std::string::npos);
}

TEST_F(ValidateCli, SetFillsAutoAndResolvedShowsSources) {
  const CliRun run = run_cli(data("hf_zero2_auto.json") +
                          " --set train_micro_batch_size_per_gpu=4 --set train_batch_size=auto --resolved");
  EXPECT_EQ(run.exit_code, 1) << "the optimizer's and scheduler's \"auto\" are DeepSpeed errors still\n" << run.output;
  EXPECT_NE(run.output.find("train_micro_batch_size_per_gpu = 4"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("(auto-filled, line"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("zero_optimization.overlap_comm = true"), std::string::npos);
  EXPECT_NE(run.output.find("zero_optimization.stage3_prefetch_bucket_size = 50000000"), std::string::npos);
  EXPECT_NE(run.output.find("(default)"), std::string::npos);
}

TEST_F(ValidateCli, JsonOutputIsOneDocument) {
  const CliRun run = run_cli(data("batch_mismatch.json") + " --world-size 4 --json --resolved");
  EXPECT_EQ(run.exit_code, 1);
  const auto doc = nlohmann::json::parse(run.output);
  EXPECT_EQ(doc["schema"], "shardscope.validate/1");
  ASSERT_EQ(doc["files"].size(), 1u);
  const auto& file = doc["files"][0];
  EXPECT_EQ(file["ok"], false);
  EXPECT_EQ(file["errors"], 1);
  const auto& d = file["diagnostics"][0];
  EXPECT_EQ(d["code"], "batch-identity");
  EXPECT_EQ(d["line"], 2);
  EXPECT_EQ(d["path"], "train_batch_size");
  EXPECT_TRUE(file["resolved"].is_array());
}

TEST_F(ValidateCli, StrictTurnsOnPolicyLints) {
  const CliRun lenient = run_cli(data("no_clipping.json"));
  EXPECT_EQ(lenient.exit_code, 0) << lenient.output;
  EXPECT_NE(lenient.output.find(": warning: gradient_clipping is not set"), std::string::npos);
  const CliRun policy = run_cli(data("no_clipping.json") + " --strict");
  EXPECT_EQ(policy.exit_code, 1) << policy.output;
  EXPECT_NE(policy.output.find("[policy-explicit-clipping]"), std::string::npos) << policy.output;
  EXPECT_EQ(run_cli(data("stage3_nvme_offload.json") + " --world-size 8").exit_code, 0);
  const CliRun strict = run_cli(data("stage3_nvme_offload.json") + " --world-size 8 --strict");
  EXPECT_EQ(strict.exit_code, 0) << strict.output;  // notes only
  EXPECT_NE(strict.output.find(": note: 1 comment(s)"), std::string::npos) << strict.output;
}

// Issue 22's campaign: `validate /dev/zero` grew to 1.7 GB and never ended; a directory gave
// "basic_filebuf::underflow".
TEST_F(ValidateCli, DevicesAndDirectoriesAreRefusedByTypeWithExit2) {
  const CliRun dev = run_cli("/dev/zero");
  EXPECT_EQ(dev.exit_code, 2) << dev.output;
  EXPECT_NE(dev.output.find("/dev/zero: is a character device, not a JSON config file"), std::string::npos) << dev.output;
  const CliRun dir = run_cli(SHARDSCOPE_TEST_DATA_DIR);
  EXPECT_EQ(dir.exit_code, 2) << dir.output;
  EXPECT_NE(dir.output.find(": is a directory, not a JSON config file"), std::string::npos) << dir.output;
}

// Issue 31: an unknown key holding an escape sequence cleared the screen of whoever validated it.
TEST_F(ValidateCli, AKeyFromTheFileIsShownEscaped) {
  const std::string path = std::filesystem::temp_directory_path() / "shardscope_escape_key.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("{\"train_batch_size\": 8, \"bad\\u001b[2J\\u001b]0;owned\\u0007key\": 1}", f);
    std::fclose(f);
  }
  const CliRun run = run_cli(path);
  EXPECT_NE(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("unknown key"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
  EXPECT_EQ(run.output.find('\x07'), std::string::npos);
  EXPECT_NE(run.output.find("bad\\x1b[2J\\x1b]0;owned\\x07key"), std::string::npos) << run.output;
  std::filesystem::remove(path);
}

}  // namespace
