#pragma once
// CPU Adam/AdamW on flat fp32 buffers (DeepSpeedCPUAdam's maths): vectorised for AVX2/AVX-512,
// parallel over fixed chunks with OpenMP, with an optional bf16/fp16 copy of the updated weights
// and bf16/fp16 gradients widened on the fly. cpu_adam_step_reference is the plain loop the tests
// compare against; every SIMD level gives the same bits as it.

#include <cstdint>

#include "kernels/cpu_features.hpp"
#include "kernels/flat_params.hpp"
#include "kernels/optimizer_options.hpp"

namespace shardscope::kernels {

struct AdamState {
  float* exp_avg = nullptr;     ///< first moment, zero before step 1
  float* exp_avg_sq = nullptr;  ///< second moment, zero before step 1
};

/// One Adam/AdamW step `step` (>= 1, counted by the caller) over `flat`, on SIMD level `level`.
void cpu_adam_step(const AdamOptions& options, const FlatParams& flat, const AdamState& state,
                   std::int64_t step, SimdLevel level = active_simd_level());
/// The same step as a single-threaded scalar loop: the reference for tests.
void cpu_adam_step_reference(const AdamOptions& options, const FlatParams& flat, const AdamState& state,
                             std::int64_t step);
/// Applies coefficients `c` to elements [begin, end) with scalar code (SIMD tails use it too).
void cpu_adam_scalar_range(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                           std::size_t begin, std::size_t end);

}  // namespace shardscope::kernels
