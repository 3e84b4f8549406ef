#include "sessions/host_probe.hpp"

#include <gtest/gtest.h>

namespace shardscope::sessions {
namespace {

TEST(HostProbe, ParsesMeminfoTotalInKilobytes) {
  const std::string meminfo = "MemTotal:       24573440 kB\nMemFree:        23000000 kB\n";
  EXPECT_EQ(parse_meminfo_total(meminfo), 24573440ull * 1024);
  EXPECT_EQ(parse_meminfo_total("MemFree: 10 kB\n"), std::nullopt);
}

TEST(HostProbe, ParsesFirstCpuModel) {
  const std::string cpuinfo =
      "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\nprocessor\t: 1\n"
      "model name\t: other\n";
  EXPECT_EQ(parse_cpuinfo_model(cpuinfo), "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(parse_cpuinfo_model("processor : 0\n"), "");
}

TEST(HostProbe, CudaVisibleDevicesStopsAtFirstInvalidEntry) {
  EXPECT_EQ(parse_cuda_visible_devices("0,1,3"), (std::vector<std::string>{"0", "1", "3"}));
  EXPECT_EQ(parse_cuda_visible_devices("0,1,-1,2"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(parse_cuda_visible_devices("GPU-8f6a,1"), (std::vector<std::string>{"GPU-8f6a", "1"}));
  EXPECT_TRUE(parse_cuda_visible_devices("").empty());
  EXPECT_TRUE(parse_cuda_visible_devices("-1").empty());
  EXPECT_TRUE(parse_cuda_visible_devices("NoDevFiles").empty());
}

TEST(HostProbe, ParsesLimitsAsUlimitPrintsThem) {
  EXPECT_EQ(parse_limit("unlimited"), std::nullopt);
  EXPECT_EQ(parse_limit("8192", 1024), 8192ull * 1024);
  EXPECT_EQ(parse_limit(" 1024\n"), 1024ull);
  EXPECT_THROW(parse_limit("lots"), std::invalid_argument);
  EXPECT_THROW(parse_limit(""), std::invalid_argument);
  EXPECT_THROW(parse_limit("-5"), std::invalid_argument);
}

TEST(HostProbe, FormatsBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(64ull << 20), "64.00 MiB");
  EXPECT_EQ(format_bytes(141ull << 30), "141.00 GiB");
}

HostInfo healthy_host() {
  HostInfo host;
  host.shm_bytes = 8ull << 30;
  host.memlock_soft_bytes = std::nullopt;  // unlimited
  host.nofile_soft = 1048576;
  return host;
}

const EnvironmentCheck* find_check(const std::vector<EnvironmentCheck>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(HostChecks, HealthyHostHasNoWarnings) {
  for (const auto& check : check_host(healthy_host()))
    EXPECT_NE(check.severity, CheckSeverity::kWarning) << check.message;
}

TEST(HostChecks, DockerDefaultShmIsFlaggedWithTheFix) {
  HostInfo host = healthy_host();
  host.shm_bytes = 64ull << 20;
  const auto checks = check_host(host);
  const auto* shm = find_check(checks, "shm");
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ(shm->severity, CheckSeverity::kWarning);
  EXPECT_NE(shm->message.find("64.00 MiB"), std::string::npos);
  EXPECT_NE(shm->hint.find("--shm-size"), std::string::npos);
  host.shm_bytes = kMinShmBytes;  // exactly the threshold is fine
  EXPECT_EQ(find_check(check_host(host), "shm")->severity, CheckSeverity::kOk);
}

TEST(HostChecks, LowMemlockAndOpenFilesAreWarnings) {
  HostInfo host = healthy_host();
  host.memlock_soft_bytes = 8ull << 20;
  host.nofile_soft = 1024;
  const auto checks = check_host(host);
  EXPECT_EQ(find_check(checks, "memlock")->severity, CheckSeverity::kWarning);
  EXPECT_NE(find_check(checks, "memlock")->hint.find("ulimit -l"), std::string::npos);
  EXPECT_EQ(find_check(checks, "nofile")->severity, CheckSeverity::kWarning);
  EXPECT_NE(find_check(checks, "nofile")->message.find("1024"), std::string::npos);
}

TEST(HostChecks, CudaVisibleDevicesIsReportedAndAnEmptyOneWarns) {
  HostInfo host = healthy_host();
  EXPECT_EQ(find_check(check_host(host), "cuda_visible_devices"), nullptr);
  host.cuda_visible_devices = "0,1";
  const auto* info = find_check(check_host(host), "cuda_visible_devices");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->severity, CheckSeverity::kInfo);
  EXPECT_NE(info->message.find("2 device(s)"), std::string::npos);
  host.cuda_visible_devices = "";
  EXPECT_EQ(find_check(check_host(host), "cuda_visible_devices")->severity, CheckSeverity::kWarning);
}

TEST(HostProbe, ProbesThisMachine) {
  const HostInfo host = probe_host();
  EXPECT_FALSE(host.hostname.empty());
  EXPECT_GT(host.logical_cores, 0);
  EXPECT_GT(host.memory_bytes, 0u);
}

}  // namespace
}  // namespace shardscope::sessions
