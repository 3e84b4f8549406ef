#pragma once
// Gradient unscaling with the overflow check in one pass (the fp16 loss-scaler path and bf16's
// check_grad_overflow): grads *= 1/scale, and whether any input was inf or NaN, as torch's
// _amp_foreach_non_finite_check_and_unscale_ decides it (on the values before scaling).

#include <cstddef>

#include "kernels/cpu_features.hpp"

namespace shardscope::kernels {

/// Multiplies every element by `inv_scale` (skipped when it is exactly 1) and returns true when
/// any element was inf or NaN. Parallel over chunks; every element is still visited.
bool cpu_unscale_and_check(float* grads, std::size_t count, float inv_scale,
                           SimdLevel level = active_simd_level());
/// The same pass as a single-threaded scalar loop: the reference for tests.
bool cpu_unscale_and_check_reference(float* grads, std::size_t count, float inv_scale);
/// True when any element is inf or NaN (read only).
bool cpu_has_nonfinite(const float* data, std::size_t count, SimdLevel level = active_simd_level());

}  // namespace shardscope::kernels
