#pragma once
// CPU Lion (DeepSpeedCPULion / FusedLion maths) on flat fp32 buffers: the update is the sign of an
// interpolation of momentum and gradient, so every weight moves by exactly lr.

#include <cstdint>

#include "kernels/cpu_features.hpp"
#include "kernels/flat_params.hpp"
#include "kernels/optimizer_options.hpp"

namespace shardscope::kernels {

struct LionState {
  float* exp_avg = nullptr;  ///< momentum, zero before step 1
};

/// One Lion step `step` (>= 1) over `flat`, on SIMD level `level`.
void cpu_lion_step(const LionOptions& options, const FlatParams& flat, const LionState& state,
                   std::int64_t step, SimdLevel level = active_simd_level());
/// The same step as a single-threaded scalar loop: the reference for tests.
void cpu_lion_step_reference(const LionOptions& options, const FlatParams& flat, const LionState& state,
                             std::int64_t step);
/// Applies coefficients `c` to elements [begin, end) with scalar code.
void cpu_lion_scalar_range(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                           std::size_t begin, std::size_t end);

}  // namespace shardscope::kernels
