#include "kernels/cpu_unscale.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu_parallel.hpp"
#include "kernels/cpu_simd_dispatch.hpp"
#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {
namespace {

void check_args(const void* data, std::size_t count, float inv_scale, const char* kernel) {
  if (count != 0 && !data)
    throw KernelError(std::string(kernel) + ": buffer is null for " + std::to_string(count) + " elements");
  if (!std::isfinite(inv_scale))
    throw KernelError(std::string(kernel) + ": inv_scale is " + std::to_string(inv_scale) +
                      "; it must be finite (1 / loss_scale with a loss scale > 0)");
}

/// Scalar pass over [begin, end); returns whether a non-finite input was seen.
bool unscale_scalar_range(float* grads, float inv_scale, bool write, std::size_t begin, std::size_t end) {
  bool found = false;
  for (std::size_t i = begin; i < end; ++i) {
    found |= !std::isfinite(grads[i]);
    if (write) grads[i] = grads[i] * inv_scale;
  }
  return found;
}

bool run(float* grads, std::size_t count, float inv_scale, bool write, SimdLevel level) {
  const SimdLevel use = checked_simd_level(level);
  std::vector<unsigned char> found(cpu_chunk_count(count), 0);
  for_each_chunk(count, [&](std::size_t begin, std::size_t end) {
    bool seen = false;
    std::size_t tail = begin;
#ifdef SHARDSCOPE_KERNELS_X86_SIMD
    if (use == SimdLevel::kAvx512) tail = simd_avx512::unscale_range(grads, inv_scale, write, begin, end, seen);
    if (use == SimdLevel::kAvx2) tail = simd_avx2::unscale_range(grads, inv_scale, write, begin, end, seen);
#endif
    seen |= unscale_scalar_range(grads, inv_scale, write, tail, end);
    found[begin / kCpuChunkElements] = seen;
  });
  for (unsigned char f : found)
    if (f) return true;
  return false;
}

}  // namespace

bool cpu_unscale_and_check(float* grads, std::size_t count, float inv_scale, SimdLevel level) {
  check_args(grads, count, inv_scale, "cpu_unscale_and_check");
  return run(grads, count, inv_scale, inv_scale != 1.0f, level);
}

bool cpu_unscale_and_check_reference(float* grads, std::size_t count, float inv_scale) {
  check_args(grads, count, inv_scale, "cpu_unscale_and_check_reference");
  return unscale_scalar_range(grads, inv_scale, true, 0, count);
}

bool cpu_has_nonfinite(const float* data, std::size_t count, SimdLevel level) {
  check_args(data, count, 1.0f, "cpu_has_nonfinite");
  // With write == false the buffer is only read, so dropping const is safe.
  return run(const_cast<float*>(data), count, 1.0f, false, level);
}

}  // namespace shardscope::kernels
