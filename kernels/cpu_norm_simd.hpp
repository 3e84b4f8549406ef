#pragma once
// Vector bodies of cpu_norm for a vector type V; included only by the SIMD translation units.

#include "kernels/cpu_norm.hpp"

namespace shardscope::kernels {

/// Adds the squares of whole vectors of [begin, end) to `lanes` (zero on entry, begin = the chunk
/// start); returns where the scalar tail starts.
template <class V>
std::size_t square_lanes_vector_range(SquareLanes& lanes, const float* x, std::size_t begin, std::size_t end) {
  typename V::SquareLanes acc;
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) V::accumulate_squares(acc, V::load(x + i));
  double vector_lanes[8];
  V::store_lanes(acc, vector_lanes);
  for (int j = 0; j < 8; ++j) lanes.lane[j] += vector_lanes[j];
  return i;
}

/// x[i] *= factor over whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t scale_vector_range(float* x, float factor, std::size_t begin, std::size_t end) {
  const typename V::Reg f = V::set1(factor);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) V::store(x + i, V::mul(V::load(x + i), f));
  return i;
}

}  // namespace shardscope::kernels
