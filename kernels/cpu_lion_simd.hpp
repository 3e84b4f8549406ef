#pragma once
// Vector body of cpu_lion for a vector type V; included only by the SIMD translation units.

#include "kernels/cpu_lion.hpp"

namespace shardscope::kernels {

/// Processes whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t lion_vector_range(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                              std::size_t begin, std::size_t end) {
  using Reg = typename V::Reg;
  const Reg beta1 = V::set1(c.beta1), one_minus_beta1 = V::set1(c.one_minus_beta1);
  const Reg beta2 = V::set1(c.beta2), one_minus_beta2 = V::set1(c.one_minus_beta2);
  const Reg neg_lr = V::set1(c.neg_lr), after_decay = V::set1(c.after_decay);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    const Reg g = load_grad_vector<V>(flat.grads, i);
    const Reg m = V::load(state.exp_avg + i);
    const Reg blend = V::add(V::mul(m, beta1), V::mul(g, one_minus_beta1));
    const Reg p = V::add(V::mul(V::load(flat.params + i), after_decay), V::mul(V::sign(blend), neg_lr));
    V::store(state.exp_avg + i, V::add(V::mul(m, beta2), V::mul(g, one_minus_beta2)));
    V::store(flat.params + i, p);
    if (flat.copy.data) V::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
  return i;
}

}  // namespace shardscope::kernels
