#include "sessions/environment_report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace shardscope::sessions {
namespace {

EnvironmentReport sample_report() {
  EnvironmentReport r;
  r.versions = {"0.1.0", "abc123", "2.11.0", "13.0", "13.0", "13.0", "9.19.0", "2.28.9", "", "GNU 12.2.0"};
  r.accelerator.backend = "cuda";
  r.accelerator.gpus.push_back({0, "NVIDIA H200", 150754820096ull, 9, 0, 132, true, true});
  r.kernels.push_back({"cpu_adam", "optimizer", true, true, "AVX-512", ""});
  r.kernels.push_back({"cuda_fused_adam", "optimizer", true, false, "", "no CUDA device"});
  r.host.hostname = "node-1";
  r.host.os = "Debian GNU/Linux 12";
  r.host.cpu_model = "Xeon";
  r.host.logical_cores = 16;
  r.host.memory_bytes = 128ull << 30;
  r.host.shm_bytes = 64ull << 20;
  r.host.memlock_soft_bytes = std::nullopt;
  r.host.nofile_soft = 1024;
  r.host.cuda_visible_devices = "0";
  r.checks.push_back({"shm", CheckSeverity::kWarning, "/dev/shm is small", "use --shm-size"});
  return r;
}

TEST(EnvironmentReport, JsonHasTheDocumentedShape) {
  const auto j = report_to_json(sample_report());
  EXPECT_EQ(j.at("schema"), "shardscope.report/1");
  for (const char* key : {"versions", "accelerator", "kernels", "host", "checks"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.at("accelerator").at("gpu_count"), 1);
  EXPECT_EQ(j.at("accelerator").at("gpus").at(0).at("compute_capability"), "9.0");
  EXPECT_TRUE(j.at("host").at("memlock_soft_bytes").is_null());  // unlimited
  EXPECT_EQ(j.at("checks").at(0).at("severity"), "warning");
  EXPECT_EQ(j.at("kernels").at(1).at("compatible"), false);
}

TEST(EnvironmentReport, JsonRoundTrips) {
  const auto original = report_to_json(sample_report());
  EXPECT_EQ(report_to_json(report_from_json(original)), original);
}

TEST(EnvironmentReport, FromJsonNamesTheMissingKey) {
  auto j = report_to_json(sample_report());
  j.at("host").erase("os");
  try {
    report_from_json(j);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'os'"), std::string::npos) << e.what();
  }
  auto wrong = report_to_json(sample_report());
  wrong["schema"] = "shardscope.report/99";
  EXPECT_THROW(report_from_json(wrong), std::invalid_argument);
}

TEST(EnvironmentReport, TextIsDottedAndAligned) {
  const std::string text = format_report_text(sample_report());
  EXPECT_NE(text.find("libtorch version ................. 2.11.0"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 0 fp16 / bf16"), std::string::npos);
  EXPECT_NE(text.find("[WARNING] /dev/shm is small"), std::string::npos);
  EXPECT_NE(text.find("cpu_adam"), std::string::npos);
  // Every dotted line puts its value in the same column.
  std::size_t column = std::string::npos;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto dots = line.find(" ...");
    if (dots == std::string::npos) continue;
    auto value = line.find_first_not_of(". ", dots);
    if (column == std::string::npos) column = value;
    EXPECT_EQ(value, column) << line;
  }
}

}  // namespace
}  // namespace shardscope::sessions
