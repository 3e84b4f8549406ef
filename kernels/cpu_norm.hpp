#pragma once
// Squared L2 norm of a flat fp32 buffer and clip-by-scaling, on the CPU. The sum is accumulated
// in double over fixed chunks, each chunk in eight lanes (element i of a chunk goes to lane i % 8)
// combined in a fixed tree, and the chunks are added in order: the result has the same bits for
// every OpenMP thread count and every SIMD level. fp32 squares are exact in double, so only that
// order matters.

#include <cstddef>

#include "kernels/cpu_features.hpp"

namespace shardscope::kernels {

/// Eight double accumulators for one chunk; lane j holds elements j, j+8, j+16, ...
struct SquareLanes {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  /// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
  double total() const;
};

/// Adds x[i]^2 for i in [begin, end) to lane (i - chunk_begin) % 8.
void accumulate_square_lanes(SquareLanes& lanes, const float* x, std::size_t begin, std::size_t end,
                             std::size_t chunk_begin);
/// sum(x[i]^2) in double, deterministic as described above.
double cpu_squared_l2_norm(const float* x, std::size_t count, SimdLevel level = active_simd_level());
/// The same sum as one plain sequential double loop: the reference for tests.
double cpu_squared_l2_norm_reference(const float* x, std::size_t count);
/// torch.nn.utils.clip_grad_norm_'s factor: max_norm / (total_norm + 1e-6), capped at 1.
double clip_coefficient(double total_norm, double max_norm);
/// x[i] *= factor for every element (clip by scaling), in parallel.
void cpu_scale(float* x, std::size_t count, float factor, SimdLevel level = active_simd_level());

}  // namespace shardscope::kernels
