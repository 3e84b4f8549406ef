#pragma once
// Which SIMD instruction sets this CPU offers, decided once at run time (the binary is built for
// baseline x86-64 and dispatches to AVX2 or AVX-512 code paths itself).

#include <string>

namespace shardscope::kernels {

enum class SimdLevel { kScalar, kAvx2, kAvx512 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;  ///< needed for the bf16/fp16 conversions in the AVX-512 path
};

/// The features of the CPU this process runs on.
const CpuFeatures& cpu_features();
/// The best level the kernels may use on `features` (AVX2 needs FMA too, AVX-512 needs F and BW).
SimdLevel best_simd_level(const CpuFeatures& features);
/// The level in use: best_simd_level(cpu_features()) unless SHARDSCOPE_SIMD=scalar|avx2|avx512
/// asks for a lower one (a higher one than the CPU offers is ignored).
SimdLevel active_simd_level();
/// "scalar", "AVX2", "AVX-512".
std::string simd_level_name(SimdLevel level);

}  // namespace shardscope::kernels
