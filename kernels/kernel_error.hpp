#pragma once
// Typed errors of the kernels library. Callers (the engine, the CLI) catch these at their edge;
// kernels never exit().

#include <stdexcept>
#include <string>

namespace shardscope::kernels {

/// A kernel was called with arguments that break its preconditions (null buffer, bad option).
class KernelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A CUDA runtime call failed; the message names the call, the device and the context.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardscope::kernels
