#include "kernels/cpu_lamb.hpp"

#include <cmath>
#include <vector>

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"

namespace shardscope::kernels {
namespace {

void check_lamb(const FlatParams& flat, const LambState& state) {
  check_flat_params(flat, "cpu_lamb");
  check_state_buffer(state.exp_avg, flat.count, "cpu_lamb", "exp_avg");
  check_state_buffer(state.exp_avg_sq, flat.count, "cpu_lamb", "exp_avg_sq");
}

inline float lamb_update(const LambCoefficients& c, float p, float m, float v) {
  const float denom = c.eps_inside_sqrt ? std::sqrt(v + c.eps) : std::sqrt(v) + c.eps;
  return m / denom + p * c.weight_decay;
}

std::size_t simd_moments(SimdLevel level, const LambCoefficients& c, const FlatParams& flat,
                         const LambState& state, std::size_t begin, std::size_t end, SquareLanes& w,
                         SquareLanes& u) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::lamb_moments_range(c, flat, state, begin, end, w, u);
  if (level == SimdLevel::kAvx2) return simd_avx2::lamb_moments_range(c, flat, state, begin, end, w, u);
#endif
  return begin;
}

std::size_t simd_apply(SimdLevel level, const LambCoefficients& c, float scale, const FlatParams& flat,
                       const LambState& state, std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::lamb_apply_range(c, scale, flat, state, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::lamb_apply_range(c, scale, flat, state, begin, end);
#endif
  return begin;
}

}  // namespace

void cpu_lamb_moments_scalar_range(const LambCoefficients& c, const FlatParams& flat, const LambState& state,
                                   std::size_t begin, std::size_t end, std::size_t chunk_begin,
                                   SquareLanes& weight_lanes, SquareLanes& update_lanes) {
  for (std::size_t i = begin; i < end; ++i) {
    const float p = flat.params[i];
    const float g = load_grad(flat.grads, i);
    const float m = state.exp_avg[i] * c.beta1 + g * c.one_minus_beta1;
    const float v = state.exp_avg_sq[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    state.exp_avg[i] = m;
    state.exp_avg_sq[i] = v;
    const double u = lamb_update(c, p, m, v);
    const std::size_t lane = (i - chunk_begin) % 8;
    weight_lanes.lane[lane] += static_cast<double>(p) * p;
    update_lanes.lane[lane] += u * u;
  }
}

void cpu_lamb_apply_scalar_range(const LambCoefficients& c, float scale, const FlatParams& flat,
                                 const LambState& state, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    const float p = flat.params[i] - scale * lamb_update(c, flat.params[i], state.exp_avg[i], state.exp_avg_sq[i]);
    flat.params[i] = p;
    if (flat.copy.data) store_from_float(flat.copy.data, flat.copy.dtype, i, p);
  }
}

LambStepResult cpu_lamb_step(const LambOptions& options, const FlatParams& flat, const LambState& state,
                             std::int64_t step, SimdLevel level) {
  check_lamb(flat, state);
  const LambCoefficients c = lamb_coefficients(options, step);
  const SimdLevel use = checked_simd_level(level);
  std::vector<double> w_partials(cpu_chunk_count(flat.count)), u_partials(w_partials.size());
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    SquareLanes w, u;
    const std::size_t tail = simd_moments(use, c, flat, state, begin, end, w, u);
    cpu_lamb_moments_scalar_range(c, flat, state, tail, end, begin, w, u);
    w_partials[begin / kCpuChunkElements] = w.total();
    u_partials[begin / kCpuChunkElements] = u.total();
  });
  LambStepResult result;
  for (std::size_t k = 0; k < w_partials.size(); ++k) {
    result.weight_squared_norm += w_partials[k];
    result.update_squared_norm += u_partials[k];
  }
  result.trust_ratio =
      lamb_trust_ratio(result.weight_squared_norm, result.update_squared_norm, c.max_coeff, c.min_coeff);
  const float scale = c.step_size * result.trust_ratio;
  for_each_chunk(flat.count, [&](std::size_t begin, std::size_t end) {
    cpu_lamb_apply_scalar_range(c, scale, flat, state, simd_apply(use, c, scale, flat, state, begin, end), end);
  });
  return result;
}

LambStepResult cpu_lamb_step_reference(const LambOptions& options, const FlatParams& flat,
                                       const LambState& state, std::int64_t step) {
  check_lamb(flat, state);
  const LambCoefficients c = lamb_coefficients(options, step);
  LambStepResult result;
  for (std::size_t i = 0; i < flat.count; ++i) {
    const float p = flat.params[i];
    const float g = load_grad(flat.grads, i);
    state.exp_avg[i] = state.exp_avg[i] * c.beta1 + g * c.one_minus_beta1;
    state.exp_avg_sq[i] = state.exp_avg_sq[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    const double u = lamb_update(c, p, state.exp_avg[i], state.exp_avg_sq[i]);
    result.weight_squared_norm += static_cast<double>(p) * p;
    result.update_squared_norm += u * u;
  }
  result.trust_ratio =
      lamb_trust_ratio(result.weight_squared_norm, result.update_squared_norm, c.max_coeff, c.min_coeff);
  cpu_lamb_apply_scalar_range(c, c.step_size * result.trust_ratio, flat, state, 0, flat.count);
  return result;
}

}  // namespace shardscope::kernels
