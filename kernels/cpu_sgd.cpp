#include "kernels/cpu_sgd.hpp"

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"

namespace shardscope::kernels {
namespace {

void check_sgd(const SgdOptions& options, const FlatParams& flat, const SgdState& state) {
  check_flat_params(flat, "cpu_sgd");
  if (options.momentum != 0.0f) check_state_buffer(state.momentum_buffer, flat.count, "cpu_sgd", "momentum_buffer");
}

std::size_t simd_range(SimdLevel level, const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,
                       std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::sgd_range(c, flat, state, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::sgd_range(c, flat, state, begin, end);
#endif
  return begin;
}

}  // namespace

void cpu_sgd_scalar_range(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,
                          std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float p = flat.params[i];
    float g = load_grad(flat.grads, i);
    if (c.weight_decay != 0.0f) g = p * c.weight_decay + g;
    if (c.momentum != 0.0f) {
      const float buf =
          c.first_step ? g : state.momentum_buffer[i] * c.momentum + g * c.one_minus_dampening;
      state.momentum_buffer[i] = buf;
      g = c.nesterov ? buf * c.momentum + g : buf;
    }
    p = g * c.neg_lr + p;
    flat.params[i] = p;
    if (flat.copy.data) store_from_float(flat.copy.data, flat.copy.dtype, i, p);
  }
}

void cpu_sgd_step(const SgdOptions& options, const FlatParams& flat, const SgdState& state, std::int64_t step,
                  SimdLevel level) {
  check_sgd(options, flat, state);
  const SgdCoefficients c = sgd_coefficients(options, step);
  const SimdLevel use = checked_simd_level(level);
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    cpu_sgd_scalar_range(c, flat, state, simd_range(use, c, flat, state, begin, end), end);
  });
}

void cpu_sgd_step_reference(const SgdOptions& options, const FlatParams& flat, const SgdState& state,
                            std::int64_t step) {
  check_sgd(options, flat, state);
  cpu_sgd_scalar_range(sgd_coefficients(options, step), flat, state, 0, flat.count);
}

}  // namespace shardscope::kernels
