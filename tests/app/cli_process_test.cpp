// The CLI as a user meets it: exit codes, errors for unknown commands and flags, report output.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli_process.hpp"

namespace shardscope::testing {
namespace {

TEST(Cli, NoArgumentsPrintsUsageAndExits2) {
  const auto r = run_cli({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: shardscope <command>"), std::string::npos);
}

TEST(Cli, HelpListsReportAndExits0) {
  const auto r = run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("report"), std::string::npos);
}

TEST(Cli, UnknownCommandIsAUsageErrorWithASuggestion) {
  const auto r = run_cli({"reprot"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'reprot'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'report'"), std::string::npos) << r.err;
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const auto r = run_cli({"report", "--jsn"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag '--jsn'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean '--json'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, VersionNamesTheCommit) {
  const auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("shardscope 0."), std::string::npos);
  EXPECT_NE(r.out.find("(git "), std::string::npos);
}

TEST(CliReport, TextHasEverySection) {
  const auto r = run_cli({"report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* section : {"ShardScope kernel report", "general environment info", "Accelerator",
                              "Environment checks", "libtorch version", "2.11"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section;
}

TEST(CliReport, JsonParsesAndMatchesThisMachine) {
  const auto r = run_cli({"report", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "shardscope.report/1");
  EXPECT_EQ(j.at("versions").at("libtorch").get<std::string>().rfind("2.11", 0), 0u);
  const auto gpus = j.at("accelerator").at("gpus");
  EXPECT_EQ(j.at("accelerator").at("gpu_count"), gpus.size());
  if (gpus.empty()) {
    EXPECT_EQ(j.at("accelerator").at("backend"), "cpu");
    EXPECT_FALSE(j.at("accelerator").at("note").get<std::string>().empty());
  }
  for (const auto& gpu : gpus)  // DeepSpeed's rules, from the reported capability
    EXPECT_EQ(gpu.at("bf16_supported").get<bool>(), gpu.at("capability_major").get<int>() >= 8);
}

TEST(CliReport, CudaVisibleDevicesShowsUpAsACheck) {
  const auto r = run_cli({"report", "--json"}, {"CUDA_VISIBLE_DEVICES="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& check : j.at("checks"))
    if (check.at("name") == "cuda_visible_devices") {
      found = true;
      EXPECT_EQ(check.at("severity"), "warning");
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace shardscope::testing
