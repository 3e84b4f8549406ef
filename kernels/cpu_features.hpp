#pragma once
// Which SIMD instruction sets this CPU offers, decided once at run time (the binary is built for
// baseline x86-64 and dispatches to AVX2 or AVX-512 code paths itself).

#include <string>
#include <vector>

namespace shardscope::kernels {

enum class SimdLevel { kScalar, kAvx2, kAvx512 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;      ///< fp16 <-> fp32 conversions in the AVX2 path
  bool avx512f = false;
  bool avx512bw = false;  ///< needed for the bf16/fp16 conversions in the AVX-512 path
};

/// The features of the CPU this process runs on.
const CpuFeatures& cpu_features();
/// The best level the kernels may use on `features` (AVX2 needs FMA and F16C too, AVX-512 needs
/// F and BW on top of AVX2), capped at what this build compiled (scalar only off x86-64).
SimdLevel best_simd_level(const CpuFeatures& features);
/// The level in use: best_simd_level(cpu_features()) unless SHARDSCOPE_SIMD=scalar|avx2|avx512
/// asks for a lower one (a higher one than the CPU offers is ignored).
SimdLevel active_simd_level();
/// "scalar", "AVX2", "AVX-512".
std::string simd_level_name(SimdLevel level);
/// Every level usable on this CPU, lowest first (always starts with kScalar).
std::vector<SimdLevel> available_simd_levels();
/// `requested` if this CPU and build can run it; otherwise throws KernelError saying which
/// instruction set is missing (running it would die with SIGILL).
SimdLevel checked_simd_level(SimdLevel requested);
/// Whether this build compiled the AVX2 and AVX-512 paths (x86-64 only).
bool simd_paths_compiled();
/// Threads an OpenMP parallel region would use here (1 without OpenMP).
int cpu_thread_count();
/// Sets the threads the CPU kernels' parallel regions use (no-op without OpenMP).
void set_cpu_thread_count(int threads);

}  // namespace shardscope::kernels
