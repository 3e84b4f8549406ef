#pragma once
// CPU SGD with momentum, dampening, Nesterov and weight decay (torch.optim.SGD's maths) on flat
// fp32 buffers. On step 1 the momentum buffer becomes a copy of the gradient, as torch does.

#include <cstdint>

#include "kernels/cpu_features.hpp"
#include "kernels/flat_params.hpp"
#include "kernels/optimizer_options.hpp"

namespace shardscope::kernels {

struct SgdState {
  float* momentum_buffer = nullptr;  ///< needed only when momentum > 0
};

/// One SGD step `step` (>= 1) over `flat`, on SIMD level `level`.
void cpu_sgd_step(const SgdOptions& options, const FlatParams& flat, const SgdState& state, std::int64_t step,
                  SimdLevel level = active_simd_level());
/// The same step as a single-threaded scalar loop: the reference for tests.
void cpu_sgd_step_reference(const SgdOptions& options, const FlatParams& flat, const SgdState& state,
                            std::int64_t step);
/// Applies coefficients `c` to elements [begin, end) with scalar code.
void cpu_sgd_scalar_range(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,
                          std::size_t begin, std::size_t end);

}  // namespace shardscope::kernels
