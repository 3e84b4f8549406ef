#include "kernels/kernel_registry.hpp"

namespace shardscope::kernels {

std::vector<KernelAvailability> list_kernels() {
  std::vector<KernelAvailability> kernels;
  return kernels;
}

}  // namespace shardscope::kernels
