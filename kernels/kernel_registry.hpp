#pragma once
// The kernels of this folder as `shardscope report` lists them: compiled in, usable here, and why
// not. Each kernel family adds its own entry in kernel_registry.cpp.

#include <string>
#include <vector>

namespace shardscope::kernels {

struct KernelAvailability {
  std::string name;    ///< e.g. "cpu_adam"
  std::string family;  ///< "optimizer", "precision", "norm", "io"
  bool compiled_in = false;
  bool compatible = false;
  std::string detail;  ///< e.g. "AVX-512, OpenMP 8 threads"
  std::string reason;  ///< why it is not compiled in, or not usable on this machine
};

/// Every kernel family, in report order.
std::vector<KernelAvailability> list_kernels();

}  // namespace shardscope::kernels
