#pragma once
// Vector body of cpu_adagrad for a vector type V; included only by the SIMD translation units.

#include "kernels/cpu_adagrad.hpp"

namespace shardscope::kernels {

/// Processes whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t adagrad_vector_range(const AdagradCoefficients& c, const FlatParams& flat,
                                 const AdagradState& state, std::size_t begin, std::size_t end) {
  using Reg = typename V::Reg;
  const Reg neg_clr = V::set1(c.neg_clr), eps = V::set1(c.eps), decay = V::set1(c.weight_decay);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    Reg p = V::load(flat.params + i);
    Reg g = load_grad_vector<V>(flat.grads, i);
    if (c.weight_decay != 0.0f) g = V::add(V::mul(p, decay), g);
    const Reg sum = V::add(V::load(state.sum + i), V::mul(g, g));
    const Reg std_dev = V::add(V::sqrt(sum), eps);
    p = V::add(V::mul(V::div(g, std_dev), neg_clr), p);
    V::store(state.sum + i, sum);
    V::store(flat.params + i, p);
    if (flat.copy.data) V::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
  return i;
}

}  // namespace shardscope::kernels
