#pragma once
// CPU Adagrad (torch.optim.Adagrad's maths, which DeepSpeed runs for "Adagrad") on flat fp32
// buffers. initial_accumulator_value is whatever the caller filled the state with.

#include <cstdint>

#include "kernels/cpu_features.hpp"
#include "kernels/flat_params.hpp"
#include "kernels/optimizer_options.hpp"

namespace shardscope::kernels {

struct AdagradState {
  float* sum = nullptr;  ///< running sum of squared gradients
};

/// One Adagrad step `step` (>= 1) over `flat`, on SIMD level `level`.
void cpu_adagrad_step(const AdagradOptions& options, const FlatParams& flat, const AdagradState& state,
                      std::int64_t step, SimdLevel level = active_simd_level());
/// The same step as a single-threaded scalar loop: the reference for tests.
void cpu_adagrad_step_reference(const AdagradOptions& options, const FlatParams& flat,
                                const AdagradState& state, std::int64_t step);
/// Applies coefficients `c` to elements [begin, end) with scalar code.
void cpu_adagrad_scalar_range(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state,
                              std::size_t begin, std::size_t end);

}  // namespace shardscope::kernels
