#pragma once
// Whether this build's CUDA kernels can run here: a device is present and the fatbinary holds code
// for its architecture (we build sm_80 SASS and compute_90 PTX). Used by the kernels table.

#include <string>

namespace shardscope::kernels {

struct CudaKernelProbe {
  bool usable = false;
  std::string detail;  ///< e.g. "device 0: NVIDIA H200 (sm_90)"
  std::string reason;  ///< e.g. "no CUDA device: cudaErrorNoDevice: no CUDA-capable device is detected"
};

/// Loads one kernel of this library on device 0; never throws.
CudaKernelProbe probe_cuda_kernels();

}  // namespace shardscope::kernels
