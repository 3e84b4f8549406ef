#pragma once
// Runs an optimizer kernel at every SIMD level this CPU has, on every size of kSizes and every
// (grad dtype, copy dtype) pair, for several steps, against its scalar reference on a twin set of
// buffers, and checks parameters, states and the 16-bit copy.

#include <functional>

#include "tests/kernels/kernel_test_util.hpp"

namespace shardscope::kernels::testing {

using KernelRun = std::function<void(SimdLevel level, OptimizerBuffers& buffers, std::int64_t step)>;
using ReferenceRun = std::function<void(OptimizerBuffers& buffers, std::int64_t step)>;

inline void check_against_reference(int state_count, const KernelRun& run, const ReferenceRun& reference,
                                    int steps = 3) {
  for (SimdLevel level : available_simd_levels()) {
    for (std::size_t n : kSizes) {
      for (const auto& [grad_dtype, copy_dtype] : kDtypeCombos) {
        const std::string label = level_label(level, n, grad_dtype, copy_dtype);
        OptimizerBuffers a(n, state_count, 7, grad_dtype, copy_dtype);
        OptimizerBuffers b(n, state_count, 7, grad_dtype, copy_dtype);
        for (int step = 1; step <= steps; ++step) {
          a.fill_grads(100 + step);
          b.fill_grads(100 + step);
          run(level, a, step);
          reference(b, step);
        }
        expect_all_close(a.params, b.params, 1e-6, label + " params");
        for (int k = 0; k < state_count; ++k)
          expect_all_close(a.states[k], b.states[k], 1e-6, label + " state " + std::to_string(k));
        expect_same_copy(a, b, label);
        if (n > 0) {
          EXPECT_NE(a.params, OptimizerBuffers(n, state_count, 7, grad_dtype, copy_dtype).params) << label;
        }
      }
    }
  }
}

}  // namespace shardscope::kernels::testing
