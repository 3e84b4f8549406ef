#pragma once
// The full environment report (`shardscope report`, and every session's run-start record):
// LibTorch, CUDA, cuDNN and NCCL versions, GPUs, the kernels table and the host checks, without
// loading LibTorch. LibTorch's version and the CUDA version it was built for are facts of the
// build (read from the wheel at configure time); cuDNN's and NCCL's are asked of the libraries
// LibTorch would load (the wheel's nvidia/ packages first, as its RPATH does), through dlopen.

#include <string>

#include "sessions/environment_report.hpp"

namespace shardscope::profiler {

/// Probes this process's machine; never throws (missing pieces are reported as such).
sessions::EnvironmentReport collect_environment_report();

/// cuDNN's version as "9.19.0" (cudnnGetVersion of libcudnn.so.9), or "" when it cannot be loaded.
std::string cudnn_runtime_version();
/// NCCL's version as "2.28.9" (ncclGetVersion of libnccl.so.2), or "" when it cannot be loaded.
std::string nccl_runtime_version();

}  // namespace shardscope::profiler
