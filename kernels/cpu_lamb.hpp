#pragma once
// CPU Lamb (DeepSpeed FusedLamb's maths) on one flat fp32 tensor. Call it once per parameter
// tensor: the trust ratio ||w|| / ||update|| is per tensor, as FusedLamb computes it. Two passes:
// the first updates the moments and sums ||w||^2 and ||update||^2 (deterministically, as
// cpu_norm does); the second recomputes the update and applies it scaled by the clamped ratio.

#include <cstdint>

#include "kernels/cpu_features.hpp"
#include "kernels/cpu_norm.hpp"
#include "kernels/flat_params.hpp"
#include "kernels/optimizer_options.hpp"

namespace shardscope::kernels {

struct LambState {
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
};

/// What a Lamb step measured (DeepSpeed exposes the coefficient as lamb_coeffs).
struct LambStepResult {
  double weight_squared_norm = 0.0;
  double update_squared_norm = 0.0;
  float trust_ratio = 1.0f;
};

/// One Lamb step `step` (>= 1) over one parameter tensor `flat`, on SIMD level `level`.
LambStepResult cpu_lamb_step(const LambOptions& options, const FlatParams& flat, const LambState& state,
                             std::int64_t step, SimdLevel level = active_simd_level());
/// The same step as a single-threaded scalar loop (plain double sums): the reference for tests.
LambStepResult cpu_lamb_step_reference(const LambOptions& options, const FlatParams& flat,
                                       const LambState& state, std::int64_t step);
/// First pass over [begin, end) in scalar code: moments, then ||w||^2 and ||u||^2 into lanes.
void cpu_lamb_moments_scalar_range(const LambCoefficients& c, const FlatParams& flat, const LambState& state,
                                   std::size_t begin, std::size_t end, std::size_t chunk_begin,
                                   SquareLanes& weight_lanes, SquareLanes& update_lanes);
/// Second pass over [begin, end) in scalar code: p -= scale * update (scale = step_size * ratio).
void cpu_lamb_apply_scalar_range(const LambCoefficients& c, float scale, const FlatParams& flat,
                                 const LambState& state, std::size_t begin, std::size_t end);

}  // namespace shardscope::kernels
