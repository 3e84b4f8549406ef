#pragma once
// The one CUDA error check of the kernels library (STYLE.md item 6): a failed runtime call throws
// CudaError naming the call, the device it ran on and the kernel entry point, plus the
// preconditions every checked entry point shares and an NVTX range that compiles out without NVTX.
// Only for builds with SHARDSCOPE_HAS_CUDA.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace shardscope::kernels {

/// Throws CudaError when `status` is not cudaSuccess: "<call> failed in <context> on device N
/// (<name>): cudaErrorX: <text> (<file>:<line>)".
void cuda_check(cudaError_t status, const char* call, const char* context, const char* file, int line);

/// Throws KernelError unless `pointer` is device (or managed) memory; `what` names the argument.
/// A null pointer passes only when `count` is 0.
void check_device_pointer(const void* pointer, std::size_t count, const char* kernel, const char* what);

/// Scoped NVTX range named after the kernel entry point; a no-op when NVTX is not compiled in.
class CudaNvtxRange {
 public:
  explicit CudaNvtxRange(const char* name);
  ~CudaNvtxRange();
  CudaNvtxRange(const CudaNvtxRange&) = delete;
  CudaNvtxRange& operator=(const CudaNvtxRange&) = delete;
};

}  // namespace shardscope::kernels

/// Checks a CUDA runtime call; `context` names the entry point that made it.
#define SHARDSCOPE_CUDA_CHECK(call, context) \
  ::shardscope::kernels::cuda_check((call), #call, (context), __FILE__, __LINE__)
