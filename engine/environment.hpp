#pragma once
// The full environment report (`shardscope report`): LibTorch, CUDA, cuDNN and NCCL versions,
// GPUs, the kernels table and the host checks. Lives in the engine because only the engine links
// LibTorch; the GUI gets the same report by running `shardscope report --json`.

#include "sessions/environment_report.hpp"

namespace shardscope::engine {

/// Probes this process's machine; never throws (missing pieces are reported as such).
sessions::EnvironmentReport collect_environment_report();

}  // namespace shardscope::engine
