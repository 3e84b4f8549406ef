#pragma once
// The vector body of cpu_adam for a vector type V (VecAvx2 or VecAvx512). Included only by the
// SIMD translation units; mirrors cpu_adam_scalar_range operation for operation.

#include "kernels/cpu_adam.hpp"

namespace shardscope::kernels {

/// Processes whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t adam_vector_range(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                              std::size_t begin, std::size_t end) {
  using Reg = typename V::Reg;
  const Reg beta1 = V::set1(c.beta1), one_minus_beta1 = V::set1(c.one_minus_beta1);
  const Reg beta2 = V::set1(c.beta2), one_minus_beta2 = V::set1(c.one_minus_beta2);
  const Reg eps = V::set1(c.eps), step_size = V::set1(c.step_size);
  const Reg bc2_rsqrt = V::set1(c.bias_correction2_rsqrt);
  const Reg l2_decay = V::set1(c.l2_decay), decoupled = V::set1(c.decoupled_decay);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    Reg p = V::load(flat.params + i);
    Reg g = load_grad_vector<V>(flat.grads, i);
    if (c.l2_decay != 0.0f) g = V::add(V::mul(p, l2_decay), g);
    const Reg m = V::add(V::mul(V::load(state.exp_avg + i), beta1), V::mul(g, one_minus_beta1));
    const Reg v = V::add(V::mul(V::load(state.exp_avg_sq + i), beta2), V::mul(V::mul(g, g), one_minus_beta2));
    const Reg denom = V::add(V::mul(V::sqrt(v), bc2_rsqrt), eps);
    const Reg update = V::div(m, denom);
    if (c.decoupled_decay != 0.0f) p = V::add(p, V::mul(p, decoupled));
    p = V::add(V::mul(update, step_size), p);
    V::store(state.exp_avg + i, m);
    V::store(state.exp_avg_sq + i, v);
    V::store(flat.params + i, p);
    if (flat.copy.data) V::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
  return i;
}

}  // namespace shardscope::kernels
