#pragma once
// Shared fixtures of the kernels tests: random flat buffers, sizes that straddle every vector
// width and chunk boundary, and an element-wise closeness check.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/dtype.hpp"
#include "kernels/flat_params.hpp"

namespace shardscope::kernels::testing {

/// Not multiples of 8 or 16 except where the boundary itself is the case; 100003 spans 7 chunks.
inline const std::vector<std::size_t> kSizes = {0, 1, 7, 8, 15, 16, 1000, 100003};

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Parameters, gradients (kept in fp32 and as 16-bit), k state buffers and a 16-bit copy.
struct OptimizerBuffers {
  std::vector<float> params;
  std::vector<float> grads32;
  std::vector<std::uint16_t> grads16;
  std::vector<std::vector<float>> states;
  std::vector<std::uint16_t> copy;
  Dtype grad_dtype = Dtype::kFloat32;
  Dtype copy_dtype = Dtype::kFloat32;  ///< kFloat32 here means: no copy

  OptimizerBuffers(std::size_t n, int state_count, std::uint32_t seed, Dtype grads, Dtype copy_type)
      : params(random_floats(n, seed, -1.0f, 1.0f)), grads32(n), grads16(n), copy(n, 0),
        grad_dtype(grads), copy_dtype(copy_type) {
    for (int k = 0; k < state_count; ++k) states.emplace_back(n, 0.0f);
  }

  /// Fresh gradients for one step; 16-bit ones are rounded first so both views hold one value.
  void fill_grads(std::uint32_t seed, float scale = 1.0f) {
    grads32 = random_floats(params.size(), seed, -scale, scale);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (grad_dtype == Dtype::kFloat32) continue;
      grads16[i] = grad_dtype == Dtype::kBFloat16 ? float_to_bf16(grads32[i]) : float_to_fp16(grads32[i]);
      grads32[i] = load_as_float(grads16.data(), grad_dtype, i);
    }
  }

  FlatParams flat() {
    FlatParams f;
    f.params = params.data();
    f.count = params.size();
    f.grads.dtype = grad_dtype;
    f.grads.data = grad_dtype == Dtype::kFloat32 ? static_cast<const void*>(grads32.data())
                                                 : static_cast<const void*>(grads16.data());
    if (copy_dtype != Dtype::kFloat32) f.copy = {copy.data(), copy_dtype};
    return f;
  }
};

/// |a - b| <= rel * max(|a|, |b|) + abs for every element.
inline void expect_all_close(const std::vector<float>& a, const std::vector<float>& b, double rel,
                             const std::string& what, double abs = 1e-30) {
  ASSERT_EQ(a.size(), b.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    const double bound = rel * std::fmax(std::fabs(a[i]), std::fabs(b[i])) + abs;
    if (!(diff <= bound) && ++bad <= 3)
      ADD_FAILURE() << what << "[" << i << "]: " << a[i] << " vs " << b[i] << " (relative bound " << rel << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size() << " elements differ";
}

inline void expect_same_copy(const OptimizerBuffers& a, const OptimizerBuffers& b, const std::string& what) {
  if (a.copy_dtype == Dtype::kFloat32) return;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.copy.size(); ++i) bad += a.copy[i] != b.copy[i];
  EXPECT_EQ(bad, 0u) << what << ": 16-bit copies differ in " << bad << " elements";
  // The copy is the rounding of the updated fp32 master.
  for (std::size_t i = 0; i < a.params.size() && i < 64; ++i) {
    const std::uint16_t expected =
        a.copy_dtype == Dtype::kBFloat16 ? float_to_bf16(a.params[i]) : float_to_fp16(a.params[i]);
    EXPECT_EQ(a.copy[i], expected) << what << " copy[" << i << "]";
  }
}

/// Level name for test messages.
inline std::string level_label(SimdLevel level, std::size_t n, Dtype grads, Dtype copy) {
  return simd_level_name(level) + " n=" + std::to_string(n) + " grads=" + dtype_name(grads) +
         " copy=" + (copy == Dtype::kFloat32 ? std::string("none") : dtype_name(copy));
}

/// The (grad dtype, copy dtype) pairs every optimizer is run with.
inline const std::vector<std::pair<Dtype, Dtype>> kDtypeCombos = {
    {Dtype::kFloat32, Dtype::kFloat32},
    {Dtype::kFloat32, Dtype::kBFloat16},
    {Dtype::kBFloat16, Dtype::kBFloat16},
    {Dtype::kFloat16, Dtype::kFloat16},
};

}  // namespace shardscope::kernels::testing
