#pragma once
// Internal: the entry points of the two SIMD translation units (cpu_simd_avx2.cpp built with
// -mavx2 -mfma -mf16c, cpu_simd_avx512.cpp with -mavx512f -mavx512bw). Each processes whole vectors
// of [begin, end) and returns where the caller's scalar tail must start. Only the family .cpp files
// call these, after checked_simd_level said the CPU can run them.

#include <cstddef>

#include "kernels/cpu_adagrad.hpp"
#include "kernels/cpu_adam.hpp"
#include "kernels/cpu_lamb.hpp"
#include "kernels/cpu_lion.hpp"
#include "kernels/cpu_norm.hpp"
#include "kernels/cpu_sgd.hpp"

#ifdef SHARDSCOPE_KERNELS_X86_SIMD
#define SHARDSCOPE_DECLARE_SIMD_ENTRY_POINTS                                                                \
  std::size_t adam_range(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,         \
                         std::size_t begin, std::size_t end);                                               \
  std::size_t lamb_moments_range(const LambCoefficients& c, const FlatParams& flat, const LambState& state, \
                                 std::size_t begin, std::size_t end, SquareLanes& weight_lanes,             \
                                 SquareLanes& update_lanes);                                                \
  std::size_t lamb_apply_range(const LambCoefficients& c, float scale, const FlatParams& flat,              \
                               const LambState& state, std::size_t begin, std::size_t end);                 \
  std::size_t lion_range(const LionCoefficients& c, const FlatParams& flat, const LionState& state,         \
                         std::size_t begin, std::size_t end);                                               \
  std::size_t adagrad_range(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state, \
                            std::size_t begin, std::size_t end);                                            \
  std::size_t sgd_range(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,            \
                        std::size_t begin, std::size_t end);                                                \
  std::size_t square_lanes_range(SquareLanes& lanes, const float* x, std::size_t begin, std::size_t end);   \
  std::size_t scale_range(float* x, float factor, std::size_t begin, std::size_t end);                     \
  std::size_t unscale_range(float* grads, float inv_scale, bool write, std::size_t begin, std::size_t end,  \
                            bool& found);

namespace shardscope::kernels::simd_avx2 {
SHARDSCOPE_DECLARE_SIMD_ENTRY_POINTS
}  // namespace shardscope::kernels::simd_avx2

namespace shardscope::kernels::simd_avx512 {
SHARDSCOPE_DECLARE_SIMD_ENTRY_POINTS
}  // namespace shardscope::kernels::simd_avx512

#undef SHARDSCOPE_DECLARE_SIMD_ENTRY_POINTS
#endif
