#pragma once
// Vector body of cpu_unscale for a vector type V; included only by the SIMD translation units.

#include "kernels/cpu_unscale.hpp"

namespace shardscope::kernels {

/// Checks (and when `write`, scales) whole vectors of [begin, end); sets `found` when a lane was
/// inf or NaN; returns where the scalar tail starts.
template <class V>
std::size_t unscale_vector_range(float* grads, float inv_scale, bool write, std::size_t begin, std::size_t end,
                                 bool& found) {
  const typename V::Reg s = V::set1(inv_scale);
  int mask = 0;
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    const typename V::Reg g = V::load(grads + i);
    mask |= V::nonfinite_mask(g);
    if (write) V::store(grads + i, V::mul(g, s));
  }
  found = found || mask != 0;
  return i;
}

}  // namespace shardscope::kernels
