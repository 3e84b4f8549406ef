// A run that ends before its first step: the cause named with the way to launch it, from the
// real output of a Trainer + DeepSpeed 0.19.7 script run with plain `python` (no launcher).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "diagnosis/failed_start.hpp"

namespace shardscope::diagnosis {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(FailedStart, DeepSpeedWithoutALauncherNamesMpiDiscoveryAndTheLaunchers) {
  const auto lines =
      lines_of(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/sessions/data/hf_trainer_deepspeed_without_launcher.log");
  ASSERT_GT(lines.size(), 10u);
  const auto f = diagnose_failed_start(lines, 1);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "failed_start");
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->summary.find("without a launcher"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("mpi4py"), std::string::npos);
  EXPECT_EQ(f->evidence, "ModuleNotFoundError: No module named 'mpi4py'");
  EXPECT_NE(f->suggested_fix.find("deepspeed --num_gpus"), std::string::npos);
  EXPECT_NE(f->suggested_fix.find("torchrun"), std::string::npos);
}

TEST(FailedStart, OtherCausesAndNone) {
  EXPECT_FALSE(diagnose_failed_start({"ModuleNotFoundError: No module named 'mpi4py'"}, 0));
  const auto module = diagnose_failed_start({"Traceback ...", "ModuleNotFoundError: No module named 'flash_attn'"}, 1);
  EXPECT_NE(module->summary.find("no module 'flash_attn'"), std::string::npos);
  EXPECT_NE(module->suggested_fix.find("pip install flash_attn"), std::string::npos);
  const auto port = diagnose_failed_start({"torch.distributed.DistNetworkError: The server socket has failed to "
                                           "listen on any local network address. port: 29500, useIpv6: false, "
                                           "code: -98, name: EADDRINUSE, message: address already in use"}, 1);
  EXPECT_NE(port->suggested_fix.find("--master_port"), std::string::npos);
  const auto config = diagnose_failed_start({"deepspeed.runtime.config.DeepSpeedConfigError: bad key"}, 1);
  EXPECT_NE(config->suggested_fix.find("shardscope validate"), std::string::npos);
  const auto other = diagnose_failed_start({"RuntimeError: something else", ""}, 3);
  EXPECT_EQ(other->evidence, "RuntimeError: something else");
  EXPECT_NE(other->summary.find("exit code 3"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::diagnosis
