#include "kernels/flat_params.hpp"

#include <cmath>
#include <string>

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {

void check_flat_params(const FlatParams& flat, const char* kernel) {
  if (flat.count == 0) return;
  if (!flat.params)
    throw KernelError(std::string(kernel) + ": params is null for " + std::to_string(flat.count) +
                      " elements; pass the fp32 master buffer");
  if (!flat.grads.data)
    throw KernelError(std::string(kernel) + ": grads is null for " + std::to_string(flat.count) +
                      " elements; pass the gradient buffer (fp32, bf16 or fp16)");
  if (!std::isfinite(flat.grads.scale))
    throw KernelError(std::string(kernel) + ": grads.scale is " + std::to_string(flat.grads.scale) +
                      "; the gradient factor must be finite (an overflowed step is skipped, never stepped)");
  if (flat.copy.data && flat.copy.dtype == Dtype::kFloat32)
    throw KernelError(std::string(kernel) +
                      ": the parameter copy must be bf16 or fp16; the fp32 master is `params` itself");
}

void check_state_buffer(const void* state, std::size_t count, const char* kernel, const char* what) {
  if (count != 0 && !state)
    throw KernelError(std::string(kernel) + ": " + what + " is null for " + std::to_string(count) +
                      " elements; allocate it with the parameters (zero-filled on the first step)");
}

void check_step(std::int64_t step, const char* kernel) {
  if (step < 1)
    throw KernelError(std::string(kernel) + ": step is " + std::to_string(step) +
                      "; steps count from 1 (the first optimizer step is step 1)");
}

}  // namespace shardscope::kernels
