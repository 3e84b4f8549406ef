#include "kernels/cpu_adagrad.hpp"

#include <cmath>

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"

namespace shardscope::kernels {
namespace {

void check_adagrad(const FlatParams& flat, const AdagradState& state) {
  check_flat_params(flat, "cpu_adagrad");
  check_state_buffer(state.sum, flat.count, "cpu_adagrad", "sum");
}

std::size_t simd_range(SimdLevel level, const AdagradCoefficients& c, const FlatParams& flat,
                       const AdagradState& state, std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::adagrad_range(c, flat, state, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::adagrad_range(c, flat, state, begin, end);
#endif
  return begin;
}

}  // namespace

void cpu_adagrad_scalar_range(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state,
                              std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float p = flat.params[i];
    float g = load_grad(flat.grads, i);
    if (c.weight_decay != 0.0f) g = p * c.weight_decay + g;
    const float sum = state.sum[i] + g * g;
    const float std_dev = std::sqrt(sum) + c.eps;
    p = (g / std_dev) * c.neg_clr + p;
    state.sum[i] = sum;
    flat.params[i] = p;
    if (flat.copy.data) store_from_float(flat.copy.data, flat.copy.dtype, i, p);
  }
}

void cpu_adagrad_step(const AdagradOptions& options, const FlatParams& flat, const AdagradState& state,
                      std::int64_t step, SimdLevel level) {
  check_adagrad(flat, state);
  const AdagradCoefficients c = adagrad_coefficients(options, step);
  const SimdLevel use = checked_simd_level(level);
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    cpu_adagrad_scalar_range(c, flat, state, simd_range(use, c, flat, state, begin, end), end);
  });
}

void cpu_adagrad_step_reference(const AdagradOptions& options, const FlatParams& flat,
                                const AdagradState& state, std::int64_t step) {
  check_adagrad(flat, state);
  cpu_adagrad_scalar_range(adagrad_coefficients(options, step), flat, state, 0, flat.count);
}

}  // namespace shardscope::kernels
