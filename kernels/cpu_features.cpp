#include "kernels/cpu_features.hpp"

#include <cstdlib>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
#endif
    return f;
  }();
  return features;
}

bool simd_paths_compiled() {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  return true;
#else
  return false;
#endif
}

SimdLevel best_simd_level(const CpuFeatures& f) {
  if (!simd_paths_compiled()) return SimdLevel::kScalar;
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (avx2 && f.avx512f && f.avx512bw) return SimdLevel::kAvx512;
  if (avx2) return SimdLevel::kAvx2;
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

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> levels{SimdLevel::kScalar};
  const SimdLevel best = best_simd_level(cpu_features());
  if (best >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (best >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

SimdLevel checked_simd_level(SimdLevel requested) {
  if (requested <= best_simd_level(cpu_features())) return requested;
  if (!simd_paths_compiled())
    throw KernelError(simd_level_name(requested) +
                      " kernels were not compiled into this build (not an x86-64 target); use scalar");
  const CpuFeatures& f = cpu_features();
  std::string missing;
  for (const auto& [has, name] : {std::pair{f.avx2, "avx2"}, {f.fma, "fma"}, {f.f16c, "f16c"},
                                  {f.avx512f, "avx512f"}, {f.avx512bw, "avx512bw"}}) {
    const bool needed = requested == SimdLevel::kAvx512 || std::string(name).rfind("avx512", 0) != 0;
    if (needed && !has) missing += std::string(missing.empty() ? "" : ", ") + name;
  }
  throw KernelError(simd_level_name(requested) + " kernels requested but this CPU lacks " + missing +
                    "; use " + simd_level_name(best_simd_level(f)) + " (or unset SHARDSCOPE_SIMD)");
}

int cpu_thread_count() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_cpu_thread_count(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(threads < 1 ? 1 : threads);
#else
  (void)threads;
#endif
}

}  // namespace shardscope::kernels
