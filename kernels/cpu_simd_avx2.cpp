// The VecAvx2 instantiations of every CPU kernel's vector body. Built with -mavx2 -mfma -mf16c (see
// kernels/CMakeLists.txt) and entered only after checked_simd_level confirmed the CPU supports it.
// Nothing here may call inline code shared with baseline translation units (dtype.hpp's
// converters, std templates): the linker could keep this file's VecAvx2 copy for everyone.

#include "kernels/cpu_adagrad_simd.hpp"
#include "kernels/cpu_adam_simd.hpp"
#include "kernels/cpu_lamb_simd.hpp"
#include "kernels/cpu_lion_simd.hpp"
#include "kernels/cpu_norm_simd.hpp"
#include "kernels/cpu_sgd_simd.hpp"
#include "kernels/cpu_simd_dispatch.hpp"
#include "kernels/cpu_unscale_simd.hpp"
#include "kernels/vec_avx2.hpp"

namespace shardscope::kernels::simd_avx2 {

std::size_t adam_range(const AdamCoefficients& c, const FlatParams& flat, const AdamState& state,
                       std::size_t begin, std::size_t end) {
  return adam_vector_range<VecAvx2>(c, flat, state, begin, end);
}

std::size_t lamb_moments_range(const LambCoefficients& c, const FlatParams& flat, const LambState& state,
                               std::size_t begin, std::size_t end, SquareLanes& weight_lanes,
                               SquareLanes& update_lanes) {
  return lamb_moments_vector_range<VecAvx2>(c, flat, state, begin, end, weight_lanes, update_lanes);
}

std::size_t lamb_apply_range(const LambCoefficients& c, float scale, const FlatParams& flat,
                             const LambState& state, std::size_t begin, std::size_t end) {
  return lamb_apply_vector_range<VecAvx2>(c, scale, flat, state, begin, end);
}

std::size_t lion_range(const LionCoefficients& c, const FlatParams& flat, const LionState& state,
                       std::size_t begin, std::size_t end) {
  return lion_vector_range<VecAvx2>(c, flat, state, begin, end);
}

std::size_t adagrad_range(const AdagradCoefficients& c, const FlatParams& flat, const AdagradState& state,
                          std::size_t begin, std::size_t end) {
  return adagrad_vector_range<VecAvx2>(c, flat, state, begin, end);
}

std::size_t sgd_range(const SgdCoefficients& c, const FlatParams& flat, const SgdState& state,
                      std::size_t begin, std::size_t end) {
  return sgd_vector_range<VecAvx2>(c, flat, state, begin, end);
}

std::size_t square_lanes_range(SquareLanes& lanes, const float* x, std::size_t begin, std::size_t end) {
  return square_lanes_vector_range<VecAvx2>(lanes, x, begin, end);
}

std::size_t scale_range(float* x, float factor, std::size_t begin, std::size_t end) {
  return scale_vector_range<VecAvx2>(x, factor, begin, end);
}

std::size_t unscale_range(float* grads, float inv_scale, bool write, std::size_t begin, std::size_t end,
                          bool& found) {
  return unscale_vector_range<VecAvx2>(grads, inv_scale, write, begin, end, found);
}

}  // namespace shardscope::kernels::simd_avx2
