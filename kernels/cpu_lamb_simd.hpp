#pragma once
// Vector bodies of cpu_lamb for a vector type V; included only by the SIMD translation units.
// Mirrors cpu_lamb_moments_scalar_range and cpu_lamb_apply_scalar_range operation for operation.

#include "kernels/cpu_lamb.hpp"

namespace shardscope::kernels {

template <class V>
typename V::Reg lamb_vector_update(const LambCoefficients& c, typename V::Reg p, typename V::Reg m,
                                   typename V::Reg v) {
  const typename V::Reg eps = V::set1(c.eps);
  const typename V::Reg denom = c.eps_inside_sqrt ? V::sqrt(V::add(v, eps)) : V::add(V::sqrt(v), eps);
  return V::add(V::div(m, denom), V::mul(p, V::set1(c.weight_decay)));
}

/// First pass over whole vectors of [begin, end) (begin = the chunk start, lanes zero on entry);
/// returns where the scalar tail starts.
template <class V>
std::size_t lamb_moments_vector_range(const LambCoefficients& c, const FlatParams& flat, const LambState& state,
                                      std::size_t begin, std::size_t end, SquareLanes& weight_lanes,
                                      SquareLanes& update_lanes) {
  using Reg = typename V::Reg;
  const Reg beta1 = V::set1(c.beta1), one_minus_beta1 = V::set1(c.one_minus_beta1);
  const Reg beta2 = V::set1(c.beta2), one_minus_beta2 = V::set1(c.one_minus_beta2);
  typename V::SquareLanes w_acc, u_acc;
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    const Reg p = V::load(flat.params + i);
    const Reg g = load_grad_vector<V>(flat.grads, i);
    const Reg m = V::add(V::mul(V::load(state.exp_avg + i), beta1), V::mul(g, one_minus_beta1));
    const Reg v = V::add(V::mul(V::load(state.exp_avg_sq + i), beta2), V::mul(V::mul(g, g), one_minus_beta2));
    V::store(state.exp_avg + i, m);
    V::store(state.exp_avg_sq + i, v);
    V::accumulate_squares(w_acc, p);
    V::accumulate_squares(u_acc, lamb_vector_update<V>(c, p, m, v));
  }
  double lanes[8];
  V::store_lanes(w_acc, lanes);
  for (int j = 0; j < 8; ++j) weight_lanes.lane[j] += lanes[j];
  V::store_lanes(u_acc, lanes);
  for (int j = 0; j < 8; ++j) update_lanes.lane[j] += lanes[j];
  return i;
}

/// Second pass over whole vectors of [begin, end); returns where the scalar tail starts.
template <class V>
std::size_t lamb_apply_vector_range(const LambCoefficients& c, float scale, const FlatParams& flat,
                                    const LambState& state, std::size_t begin, std::size_t end) {
  const typename V::Reg s = V::set1(scale);
  std::size_t i = begin;
  for (; i + V::kWidth <= end; i += V::kWidth) {
    const typename V::Reg p0 = V::load(flat.params + i);
    const typename V::Reg u =
        lamb_vector_update<V>(c, p0, V::load(state.exp_avg + i), V::load(state.exp_avg_sq + i));
    const typename V::Reg p = V::sub(p0, V::mul(s, u));
    V::store(flat.params + i, p);
    if (flat.copy.data) V::store_as(flat.copy.data, flat.copy.dtype, i, p);
  }
  return i;
}

}  // namespace shardscope::kernels
