#include "kernels/cpu_features.hpp"

#include <cstdlib>
#include <string>

namespace shardscope::kernels {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
#endif
    return f;
  }();
  return features;
}

SimdLevel best_simd_level(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx2 && f.fma) return SimdLevel::kAvx512;
  if (f.avx2 && f.fma) return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
}

SimdLevel active_simd_level() {
  static const SimdLevel level = [] {
    SimdLevel best = best_simd_level(cpu_features());
    const char* requested = std::getenv("SHARDSCOPE_SIMD");
    if (!requested) return best;
    const std::string want = requested;
    SimdLevel asked = want == "scalar" ? SimdLevel::kScalar
                      : want == "avx2" ? SimdLevel::kAvx2
                                       : SimdLevel::kAvx512;
    return asked < best ? asked : best;
  }();
  return level;
}

std::string simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "AVX2";
    case SimdLevel::kAvx512: return "AVX-512";
  }
  return "unknown";
}

}  // namespace shardscope::kernels
