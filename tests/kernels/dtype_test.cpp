// dtype: the scalar bf16/fp16 converters against values worked out by hand and against exhaustive
// round trips over every 16-bit pattern.
#include "kernels/dtype.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace shardscope::kernels {
namespace {

TEST(Dtype, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);                 // largest finite half
  EXPECT_EQ(float_to_fp16(65519.99f), 0x7bff);                // still rounds down
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);                 // halfway to 2^16: rounds to inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);    // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);    // tie with zero: even
  EXPECT_EQ(float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -14)), 0x0400);    // smallest normal
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie: stays even
  EXPECT_EQ(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: up to even
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_fp16(std::nanf("")) & 0x7e00, 0x7e00);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x3555), 0.333251953125f);
}

TEST(Dtype, Fp16RoundTripsEveryPattern) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7c00u, 0x7c00u);
      continue;
    }
    // Independent decoding: sign * mantissa * 2^exponent.
    const int e = (h >> 10) & 0x1f;
    const int m = h & 0x3ff;
    const double magnitude = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
    ASSERT_EQ(f, (h & 0x8000) ? -magnitude : magnitude) << std::hex << h;
    ASSERT_EQ(float_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  const std::uint16_t nan = float_to_bf16(std::nanf(""));
  EXPECT_TRUE(std::isnan(bf16_to_float(nan)));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), h) << std::hex << h;
  }
}

TEST(Dtype, LoadStoreThroughEveryType) {
  float f32[1];
  std::uint16_t h16[1];
  store_from_float(f32, Dtype::kFloat32, 0, 0.1f);
  EXPECT_EQ(load_as_float(f32, Dtype::kFloat32, 0), 0.1f);
  store_from_float(h16, Dtype::kBFloat16, 0, 0.1f);
  EXPECT_EQ(load_as_float(h16, Dtype::kBFloat16, 0), 0.10009765625f);
  store_from_float(h16, Dtype::kFloat16, 0, 0.1f);
  EXPECT_EQ(load_as_float(h16, Dtype::kFloat16, 0), 0.0999755859375f);
  EXPECT_EQ(dtype_name(Dtype::kBFloat16), "bf16");
  EXPECT_EQ(dtype_size(Dtype::kFloat16), 2u);
}

}  // namespace
}  // namespace shardscope::kernels
