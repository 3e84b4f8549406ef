#include "kernels/dtype.hpp"

namespace shardscope::kernels {

std::string dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat32: return "fp32";
    case Dtype::kBFloat16: return "bf16";
    case Dtype::kFloat16: return "fp16";
  }
  return "unknown";
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return float_from_bits(sign);
  // Subnormal: mantissa * 2^-24, exact in fp32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent >= -14) {
    // Normal half: drop 13 mantissa bits with round-to-nearest-even; a carry bumps the exponent,
    // which is the right answer.
    const std::uint32_t rebased = abs - (112u << 23);
    const std::uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: rounds to zero
  // Subnormal half: value = m * 2^-24 with m = mantissa_with_hidden >> shift, rounded to even.
  const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -exponent - 1;  // 14..24
  const std::uint32_t halfway = 1u << (shift - 1);
  const std::uint32_t remainder = mantissa & ((1u << shift) - 1u);
  std::uint32_t result = mantissa >> shift;
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

}  // namespace shardscope::kernels
