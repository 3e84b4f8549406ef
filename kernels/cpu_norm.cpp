#include "kernels/cpu_norm.hpp"

#include <string>
#include <vector>

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

void check_buffer(const void* x, std::size_t count, const char* kernel) {
  if (count != 0 && !x)
    throw KernelError(std::string(kernel) + ": buffer is null for " + std::to_string(count) + " elements");
}

std::size_t simd_norm(SimdLevel level, SquareLanes& lanes, const float* x, std::size_t begin,
                      std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::square_lanes_range(lanes, x, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::square_lanes_range(lanes, x, begin, end);
#endif
  return begin;
}

std::size_t simd_scale(SimdLevel level, float* x, float factor, std::size_t begin, std::size_t end) {
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
  if (level == SimdLevel::kAvx512) return simd_avx512::scale_range(x, factor, begin, end);
  if (level == SimdLevel::kAvx2) return simd_avx2::scale_range(x, factor, begin, end);
#endif
  return begin;
}

}  // namespace

double SquareLanes::total() const {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

void accumulate_square_lanes(SquareLanes& lanes, const float* x, std::size_t begin, std::size_t end,
                             std::size_t chunk_begin) {
  for (std::size_t i = begin; i < end; ++i) {
    const double d = x[i];
    lanes.lane[(i - chunk_begin) % 8] += d * d;
  }
}

double cpu_squared_l2_norm(const float* x, std::size_t count, SimdLevel level) {
  check_buffer(x, count, "cpu_squared_l2_norm");
  const SimdLevel use = checked_simd_level(level);
  std::vector<double> partials(cpu_chunk_count(count), 0.0);
  for_each_chunk(count, [&](std::size_t begin, std::size_t end) {
    SquareLanes lanes;
    accumulate_square_lanes(lanes, x, simd_norm(use, lanes, x, begin, end), end, begin);
    partials[begin / kCpuChunkElements] = lanes.total();
  });
  double total = 0.0;
  for (double p : partials) total += p;  // in chunk order, whatever thread computed each
  return total;
}

double cpu_squared_l2_norm_reference(const float* x, std::size_t count) {
  check_buffer(x, count, "cpu_squared_l2_norm_reference");
  double total = 0.0;
  for (std::size_t i = 0; i < count; ++i) total += static_cast<double>(x[i]) * x[i];
  return total;
}

double clip_coefficient(double total_norm, double max_norm) {
  if (!(max_norm > 0.0))
    throw KernelError("clip_coefficient: max_norm is " + std::to_string(max_norm) +
                      "; gradient_clipping must be > 0 (0 disables clipping: do not call the kernel)");
  const double coefficient = max_norm / (total_norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

void cpu_scale(float* x, std::size_t count, float factor, SimdLevel level) {
  check_buffer(x, count, "cpu_scale");
  const SimdLevel use = checked_simd_level(level);
  for_each_chunk(count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = simd_scale(use, x, factor, begin, end); i < end; ++i) x[i] = x[i] * factor;
  });
}

}  // namespace shardscope::kernels
