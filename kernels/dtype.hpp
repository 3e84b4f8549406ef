#pragma once
// The element types the kernels read and write, and exact scalar conversions between them.
// The conversions round to nearest even, as c10::BFloat16/c10::Half and the F16C/AVX-512
// instructions do, so a vector path and the scalar reference produce the same bits.

#include <cstdint>
#include <cstring>
#include <string>

namespace shardscope::kernels {

enum class Dtype { kFloat32, kBFloat16, kFloat16 };

/// "fp32", "bf16", "fp16".
std::string dtype_name(Dtype dtype);
/// Bytes per element: 4 or 2.
inline std::size_t dtype_size(Dtype dtype) { return dtype == Dtype::kFloat32 ? 4 : 2; }

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float float_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// bf16 is the top half of an fp32, so widening is exact.
inline float bf16_to_float(std::uint16_t h) { return float_from_bits(static_cast<std::uint32_t>(h) << 16); }

/// Round to nearest even; a NaN stays a (quiet) NaN instead of rounding into infinity.
inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

/// IEEE binary16 to fp32, exact for normals, subnormals, infinities and NaNs.
float fp16_to_float(std::uint16_t h);
/// fp32 to IEEE binary16, round to nearest even, overflow to infinity (as F16C with
/// _MM_FROUND_TO_NEAREST_INT); NaNs become a quiet NaN keeping the top payload bits.
std::uint16_t float_to_fp16(float f);

/// Reads element `i` of a buffer of `dtype` as fp32.
inline float load_as_float(const void* data, Dtype dtype, std::size_t i) {
  switch (dtype) {
    case Dtype::kFloat32: return static_cast<const float*>(data)[i];
    case Dtype::kBFloat16: return bf16_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case Dtype::kFloat16: return fp16_to_float(static_cast<const std::uint16_t*>(data)[i]);
  }
  return 0.0f;
}

/// Writes fp32 `value` to element `i` of a buffer of `dtype`, rounding to nearest even.
inline void store_from_float(void* data, Dtype dtype, std::size_t i, float value) {
  switch (dtype) {
    case Dtype::kFloat32: static_cast<float*>(data)[i] = value; return;
    case Dtype::kBFloat16: static_cast<std::uint16_t*>(data)[i] = float_to_bf16(value); return;
    case Dtype::kFloat16: static_cast<std::uint16_t*>(data)[i] = float_to_fp16(value); return;
  }
}

}  // namespace shardscope::kernels
