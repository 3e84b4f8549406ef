// DeepSpeed's estimate_zero2/zero3 arithmetic against the t5-3b table recomputed from the 0.19.6
// code (shared/reference/deepspeed.md, 1c) and against memory.rst's printed rows.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "estimator/deepspeed_formulas.hpp"

namespace shardscope::estimator {
namespace {

constexpr double kT5Params = 2851e6;
constexpr double kT5Largest = 32e6;

// DeepSpeed prints "%.2f" of bytes / 2^30.
std::string two_decimals(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", bytes / 1073741824.0);
  return buffer;
}

TEST(DeepSpeedFormulas, Zero2T5TableMatchesReference) {
  const auto rows = deepspeed_zero2_table(kT5Params, 8, 1, 1.5);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].offload_optimizer);
  EXPECT_EQ(two_decimals(rows[0].cpu_bytes), "127.45");
  EXPECT_EQ(two_decimals(rows[0].gpu_bytes), "5.31");
  EXPECT_FALSE(rows[1].offload_optimizer);
  EXPECT_EQ(two_decimals(rows[1].cpu_bytes), "127.45");
  EXPECT_EQ(two_decimals(rows[1].gpu_bytes), "11.28");  // 2P + 18P/N since PR #5099 (docs: 15.93)
}

TEST(DeepSpeedFormulas, Zero2ExactBytes) {
  // 2P + int(18P/8) = 5702e6 + 6414.75e6 truncated; cpu = P * 4 * 8 * 1.5.
  const auto row = deepspeed_zero2_row(kT5Params, 8, 1, false, 1.5);
  EXPECT_EQ(row.gpu_bytes, 5702e6 + 6414750000.0);
  EXPECT_EQ(row.cpu_bytes, 2851e6 * 48);
  // Truncation toward zero as Python's int(): 18 * 1001 / 8 = 2252.25 -> 2252.
  EXPECT_EQ(deepspeed_zero2_row(1001, 8, 1, false, 1.5).gpu_bytes, 2002 + 2252);
}

TEST(DeepSpeedFormulas, Zero2OffloadUsesTotalGpusNotPerNode) {
  // max(4 * total_gpus, 16): 2 nodes x 8 GPUs -> 64, not the docs' per-node 32.
  const auto row = deepspeed_zero2_row(1e9, 8, 2, true, 1.0);
  EXPECT_EQ(row.cpu_bytes, 64e9);
  EXPECT_EQ(deepspeed_zero2_row(1e9, 1, 1, true, 1.0).cpu_bytes, 16e9);
}

TEST(DeepSpeedFormulas, Zero3T5TableMatchesReference) {
  const auto rows = deepspeed_zero3_table(kT5Params, kT5Largest, 8, 1, 1.5);
  ASSERT_EQ(rows.size(), 6u);
  struct Expected {
    bool opt, param, init;
    const char* cpu;
    const char* gpu;
  };
  const Expected expected[] = {
      {true, true, true, "71.69", "0.12"},   {true, true, false, "127.45", "0.12"},
      {true, false, true, "63.72", "0.78"},  {true, false, false, "127.45", "0.78"},
      {false, false, true, "1.43", "6.09"},  {false, false, false, "127.45", "6.09"},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i].offload_optimizer, expected[i].opt);
    EXPECT_EQ(rows[i].offload_param, expected[i].param);
    EXPECT_EQ(rows[i].zero_init.value_or(!expected[i].init), expected[i].init);
    EXPECT_EQ(two_decimals(rows[i].cpu_bytes), expected[i].cpu);
    EXPECT_EQ(two_decimals(rows[i].gpu_bytes), expected[i].gpu);
  }
}

TEST(DeepSpeedFormulas, Zero3MultiNodeUsesGpusFactor) {
  // 2 nodes: gpus_factor = 1/2; zero_init=0 takes max(4 * per-node GPUs, 18/2).
  const auto init = deepspeed_zero3_row(1e9, 1e7, 8, 2, true, true, true, 1.0);
  EXPECT_EQ(init.cpu_bytes, 9e9);
  EXPECT_EQ(init.gpu_bytes, 4e7);
  const auto cold = deepspeed_zero3_row(1e9, 1e7, 8, 2, true, true, false, 1.0);
  EXPECT_EQ(cold.cpu_bytes, 32e9);
  const auto none = deepspeed_zero3_row(1e9, 1e7, 8, 2, false, false, true, 1.0);
  EXPECT_EQ(none.gpu_bytes, 4e7 + std::trunc(18e9 / 16));
  EXPECT_EQ(none.cpu_bytes, 1e7 * 4 * 8);
}

TEST(DeepSpeedFormulas, PrintedTableHasDeepSpeedsLayout) {
  const std::string text =
      format_deepspeed_table(deepspeed_zero3_table(kT5Params, kT5Largest, 8, 1, 1.5), kT5Params, kT5Largest, 8, 1);
  EXPECT_NE(text.find("HW: Setup with 1 node, 8 GPUs per node."), std::string::npos) << text;
  EXPECT_NE(text.find("SW: Model with 2851M total params, 32M largest layer params."), std::string::npos);
  EXPECT_NE(text.find("   71.69GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=1"),
            std::string::npos);
}

TEST(DeepSpeedFormulas, RejectsNonPositiveCluster) {
  EXPECT_ANY_THROW(deepspeed_zero2_row(1e9, 0, 1, true, 1.5));
  EXPECT_ANY_THROW(deepspeed_zero3_row(1e9, 1e6, 8, 0, true, true, true, 1.5));
}

}  // namespace
}  // namespace shardscope::estimator
