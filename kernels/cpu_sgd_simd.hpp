#pragma once
// Vector body of cpu_sgd for a vector type V; included only by the SIMD translation units.

#include "kernels/cpu_sgd.hpp"

namespace shardscope::kernels {

/// Processes whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t sgd_vector_range(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,
                             std::size_t begin, std::size_t end) {
  using Reg = typename V::Reg;
  const Reg neg_lr = V::set1(c.neg_lr), decay = V::set1(c.weight_decay);
  const Reg momentum = V::set1(c.momentum), one_minus_dampening = V::set1(c.one_minus_dampening);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    Reg p = V::load(flat.params + i);
    Reg g = load_grad_vector<V>(flat.grads, i);
    if (c.weight_decay != 0.0f) g = V::add(V::mul(p, decay), g);
    if (c.momentum != 0.0f) {
      const Reg buf = c.first_step ? g
                                   : V::add(V::mul(V::load(state.momentum_buffer + i), momentum),
                                            V::mul(g, one_minus_dampening));
      V::store(state.momentum_buffer + i, buf);
      g = c.nesterov ? V::add(V::mul(buf, momentum), g) : buf;
    }
    p = V::add(V::mul(g, neg_lr), p);
    V::store(flat.params + i, p);
    if (flat.copy.data) V::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
  return i;
}

}  // namespace shardscope::kernels
