#include "kernels/cpu_adam.hpp"

#include <cmath>

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"

namespace shardscope::kernels {
namespace {

void check_adam(const FlatParams& flat, const AdamState& state) {
  check_flat_params(flat, "cpu_adam");
  check_state_buffer(state.exp_avg, flat.count, "cpu_adam", "exp_avg");
  check_state_buffer(state.exp_avg_sq, flat.count, "cpu_adam", "exp_avg_sq");
}

std::size_t simd_range(SimdLevel level, const AdamCoefficients& c, const FlatParams& flat,
                       const AdamState& state, std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::adam_range(c, flat, state, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::adam_range(c, flat, state, begin, end);
#endif
  return begin;
}

}  // namespace

void cpu_adam_scalar_range(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                           std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float p = flat.params[i];
    float g = load_grad(flat.grads, i);
    if (c.l2_decay != 0.0f) g = p * c.l2_decay + g;  // Adam mode: L2 through the gradient
    const float m = state.exp_avg[i] * c.beta1 + g * c.one_minus_beta1;
    const float v = state.exp_avg_sq[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    const float denom = std::sqrt(v) * c.bias_correction2_rsqrt + c.eps;
    const float update = m / denom;
    if (c.decoupled_decay != 0.0f) p = p + p * c.decoupled_decay;  // AdamW: decay the weights
    p = update * c.step_size + p;
    state.exp_avg[i] = m;
    state.exp_avg_sq[i] = v;
    flat.params[i] = p;
    if (flat.copy.data) store_from_float(flat.copy.data, flat.copy.dtype, i, p);
  }
}

void cpu_adam_step(const AdamOptions& options, const FlatParams& flat, const AdamState& state,
                   std::int64_t step, SimdLevel level) {
  check_adam(flat, state);
  const AdamCoefficients c = adam_coefficients(options, step);
  const SimdLevel use = checked_simd_level(level);
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    cpu_adam_scalar_range(c, flat, state, simd_range(use, c, flat, state, begin, end), end);
  });
}

void cpu_adam_step_reference(const AdamOptions& options, const FlatParams& flat, const AdamState& state,
                             std::int64_t step) {
  check_adam(flat, state);
  cpu_adam_scalar_range(adam_coefficients(options, step), flat, state, 0, flat.count);
}

}  // namespace shardscope::kernels
