#pragma once
// VecAvx512: sixteen fp32 lanes in a __m512, the same operations as VecAvx2. Include only from a
// translation unit compiled with -mavx512f -mavx512bw (cpu_simd_avx512.cpp). Same rule as VecAvx2:
// no FMA contraction, same operation order as the scalar references, hence the same bits.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.hpp"

namespace shardscope::kernels::simd_avx512 {

struct VecAvx512 {
  using Reg = __m512;
  static constexpr std::size_t kWidth = 16;

  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg sqrt(Reg a) { return _mm512_sqrt_ps(a); }

  /// -1, 0 or +1 per lane (0 for ±0 and NaN), as torch.sign.
  static Reg sign(Reg a) {
    const __mmask16 pos = _mm512_cmp_ps_mask(a, zero(), _CMP_GT_OQ);
    const __mmask16 neg = _mm512_cmp_ps_mask(a, zero(), _CMP_LT_OQ);
    const Reg plus = _mm512_mask_blend_ps(pos, zero(), set1(1.0f));
    return _mm512_mask_blend_ps(neg, plus, set1(-1.0f));
  }

  /// Non-zero when any lane is inf or NaN (exponent bits all ones).
  static int nonfinite_mask(Reg a) {
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    const __m512i bits = _mm512_and_si512(_mm512_castps_si512(a), exponent);
    return static_cast<int>(_mm512_cmpeq_epi32_mask(bits, exponent));
  }

  static Reg load_bf16(const std::uint16_t* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }

  /// Round to nearest even as float_to_bf16 does, NaN kept quiet.
  static void store_bf16(std::uint16_t* p, Reg v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i result = _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(result));
  }

  static Reg load_fp16(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_fp16(std::uint16_t* p, Reg v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

  /// Eight double lanes: lane j sums the squares of elements j, j+8, j+16, ... of a chunk (the
  /// low half of the sixteen floats first, then the high half, as the scalar order does).
  struct SquareLanes {
    __m512d sum = _mm512_setzero_pd();
  };
  static void accumulate_squares(SquareLanes& acc, Reg a) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(a));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    acc.sum = _mm512_add_pd(acc.sum, _mm512_mul_pd(lo, lo));
    acc.sum = _mm512_add_pd(acc.sum, _mm512_mul_pd(hi, hi));
  }
  static void store_lanes(const SquareLanes& acc, double* lanes) { _mm512_storeu_pd(lanes, acc.sum); }

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

}  // namespace shardscope::kernels::simd_avx512
