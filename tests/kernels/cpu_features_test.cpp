// cpu_features: the level logic against hand-made feature sets, and the live CPU against
// /proc/cpuinfo, read independently of __builtin_cpu_supports.
#include "kernels/cpu_features.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

CpuFeatures make(bool avx2, bool fma, bool f16c, bool avx512f, bool avx512bw) {
  CpuFeatures f;
  f.avx2 = avx2;
  f.fma = fma;
  f.f16c = f16c;
  f.avx512f = avx512f;
  f.avx512bw = avx512bw;
  return f;
}

/// The "flags" line of /proc/cpuinfo, padded with spaces so " avx2 " matches whole words.
std::string proc_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
  return "";
}

TEST(CpuFeatures, LevelNeedsEveryFeatureOfIt) {
  if (!simd_paths_compiled()) GTEST_SKIP() << "SIMD paths are compiled only on x86-64";
  EXPECT_EQ(best_simd_level(make(false, false, false, false, false)), SimdLevel::kScalar);
  EXPECT_EQ(best_simd_level(make(true, false, true, false, false)), SimdLevel::kScalar);  // no FMA
  EXPECT_EQ(best_simd_level(make(true, true, false, false, false)), SimdLevel::kScalar);  // no F16C
  EXPECT_EQ(best_simd_level(make(true, true, true, false, false)), SimdLevel::kAvx2);
  EXPECT_EQ(best_simd_level(make(true, true, true, true, false)), SimdLevel::kAvx2);  // no BW
  EXPECT_EQ(best_simd_level(make(true, true, true, true, true)), SimdLevel::kAvx512);
  EXPECT_EQ(best_simd_level(make(false, false, false, true, true)), SimdLevel::kScalar);
}

TEST(CpuFeatures, MatchesProcCpuinfo) {
  const std::string flags = proc_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line on this system";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2, flags.find(" avx2 ") != std::string::npos);
  EXPECT_EQ(f.fma, flags.find(" fma ") != std::string::npos);
  EXPECT_EQ(f.f16c, flags.find(" f16c ") != std::string::npos);
  EXPECT_EQ(f.avx512f, flags.find(" avx512f ") != std::string::npos);
  EXPECT_EQ(f.avx512bw, flags.find(" avx512bw ") != std::string::npos);
}

TEST(CpuFeatures, AvailableLevelsAreAscendingAndEndAtBest) {
  const auto levels = available_simd_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), SimdLevel::kScalar);
  EXPECT_EQ(levels.back(), best_simd_level(cpu_features()));
  for (std::size_t i = 1; i < levels.size(); ++i) EXPECT_LT(levels[i - 1], levels[i]);
  EXPECT_LE(active_simd_level(), best_simd_level(cpu_features()));
}

TEST(CpuFeatures, CheckedLevelRefusesWhatTheCpuLacks) {
  for (SimdLevel level : available_simd_levels()) EXPECT_EQ(checked_simd_level(level), level);
  if (best_simd_level(cpu_features()) == SimdLevel::kAvx512)
    GTEST_SKIP() << "this CPU runs every level, nothing to refuse";
  try {
    checked_simd_level(SimdLevel::kAvx512);
    FAIL() << "AVX-512 was accepted on a CPU without it";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("AVX-512 kernels requested"), std::string::npos) << e.what();
  }
}

TEST(CpuFeatures, LevelNames) {
  EXPECT_EQ(simd_level_name(SimdLevel::kScalar), "scalar");
  EXPECT_EQ(simd_level_name(SimdLevel::kAvx2), "AVX2");
  EXPECT_EQ(simd_level_name(SimdLevel::kAvx512), "AVX-512");
  EXPECT_GE(cpu_thread_count(), 1);
}

}  // namespace
}  // namespace shardscope::kernels
