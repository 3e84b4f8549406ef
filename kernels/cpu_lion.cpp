#include "kernels/cpu_lion.hpp"

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"

namespace shardscope::kernels {
namespace {

void check_lion(const FlatParams& flat, const LionState& state) {
  check_flat_params(flat, "cpu_lion");
  check_state_buffer(state.exp_avg, flat.count, "cpu_lion", "exp_avg");
}

std::size_t simd_range(SimdLevel level, const LionCoefficients& c, const FlatParams& flat,
                       const LionState& state, std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::lion_range(c, flat, state, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::lion_range(c, flat, state, begin, end);
#endif
  return begin;
}

}  // namespace

void cpu_lion_scalar_range(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                           std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const float g = load_grad(flat.grads, i);
    const float m = state.exp_avg[i];
    const float blend = m * c.beta1 + g * c.one_minus_beta1;
    const float sign = static_cast<float>((blend > 0.0f) - (blend < 0.0f));
    const float p = flat.params[i] * c.after_decay + sign * c.neg_lr;
    state.exp_avg[i] = m * c.beta2 + g * c.one_minus_beta2;
    flat.params[i] = p;
    if (flat.copy.data) store_from_float(flat.copy.data, flat.copy.dtype, i, p);
  }
}

void cpu_lion_step(const LionOptions& options, const FlatParams& flat, const LionState& state,
                   std::int64_t step, SimdLevel level) {
  check_lion(flat, state);
  const LionCoefficients c = lion_coefficients(options, step);
  const SimdLevel use = checked_simd_level(level);
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    cpu_lion_scalar_range(c, flat, state, simd_range(use, c, flat, state, begin, end), end);
  });
}

void cpu_lion_step_reference(const LionOptions& options, const FlatParams& flat, const LionState& state,
                             std::int64_t step) {
  check_lion(flat, state);
  cpu_lion_scalar_range(lion_coefficients(options, step), flat, state, 0, flat.count);
}

}  // namespace shardscope::kernels
