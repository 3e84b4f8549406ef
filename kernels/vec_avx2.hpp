#pragma once
// VecAvx2: eight fp32 lanes in a __m256, the operations the CPU kernels need. Include only from a
// translation unit compiled with -mavx2 -mfma -mf16c (cpu_simd_avx2.cpp). The arithmetic is plain
// mul/add/div/sqrt (no FMA contraction), in the same order as the scalar references, so every SIMD
// level produces the same bits as the scalar path.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.hpp"

namespace shardscope::kernels::simd_avx2 {

struct VecAvx2 {
  using Reg = __m256;
  static constexpr std::size_t kWidth = 8;

  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm256_sqrt_ps(a); }

  /// -1, 0 or +1 per lane (0 for ±0 and NaN), as torch.sign.
  static Reg sign(Reg a) {
    const Reg one = set1(1.0f);
    const Reg pos = _mm256_and_ps(_mm256_cmp_ps(a, zero(), _CMP_GT_OQ), one);
    const Reg neg = _mm256_and_ps(_mm256_cmp_ps(a, zero(), _CMP_LT_OQ), one);
    return sub(pos, neg);
  }

  /// Non-zero when any lane is inf or NaN (exponent bits all ones).
  static int nonfinite_mask(Reg a) {
    const __m256i exponent = _mm256_set1_epi32(0x7f800000);
    const __m256i bits = _mm256_and_si256(_mm256_castps_si256(a), exponent);
    return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, exponent)));
  }

  static Reg load_bf16(const std::uint16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }

  /// Round to nearest even as float_to_bf16 does, NaN kept quiet.
  static void store_bf16(std::uint16_t* p, Reg v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i result = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // packus works within 128-bit halves; the permute puts the eight results back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(result, result), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }

  static Reg load_fp16(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store_fp16(std::uint16_t* p, Reg v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

  /// Eight double lanes: lane j sums the squares of elements j, j+8, j+16, ... of a chunk.
  struct SquareLanes {
    __m256d low = _mm256_setzero_pd();
    __m256d high = _mm256_setzero_pd();
  };
  /// Squares of fp32 values are exact in double, so only the (fixed) addition order matters.
  static void accumulate_squares(SquareLanes& acc, Reg a) {
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(a));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    acc.low = _mm256_add_pd(acc.low, _mm256_mul_pd(lo, lo));
    acc.high = _mm256_add_pd(acc.high, _mm256_mul_pd(hi, hi));
  }
  static void store_lanes(const SquareLanes& acc, double* lanes) {
    _mm256_storeu_pd(lanes, acc.low);
    _mm256_storeu_pd(lanes + 4, acc.high);
  }

  static Reg load_as(const void* data, Dtype dtype, std::size_t i) {
    switch (dtype) {
      case Dtype::kBFloat16: return load_bf16(static_cast<const std::uint16_t*>(data) + i);
      case Dtype::kFloat16: return load_fp16(static_cast<const std::uint16_t*>(data) + i);
      case Dtype::kFloat32: break;
    }
    return load(static_cast<const float*>(data) + i);
  }
  static void store_as(void* data, Dtype dtype, std::size_t i, Reg v) {
    switch (dtype) {
      case Dtype::kBFloat16: store_bf16(static_cast<std::uint16_t*>(data) + i, v); return;
      case Dtype::kFloat16: store_fp16(static_cast<std::uint16_t*>(data) + i, v); return;
      case Dtype::kFloat32: store(static_cast<float*>(data) + i, v); return;
    }
  }
};

}  // namespace shardscope::kernels::simd_avx2
