#include "kernels/cuda_check.hpp"

#include <string>

#ifdef SHARDSCOPE_KERNELS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "kernels/kernel_error.hpp"

namespace shardscope::kernels {

void cuda_check(cudaError_t status, const char* call, const char* context, const char* file, int line) {
  if (status == cudaSuccess) return;
  int device = -1;
  std::string device_text = "no current device";
  if (cudaGetDevice(&device) == cudaSuccess) {
    cudaDeviceProp prop{};
    device_text = "device " + std::to_string(device);
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) device_text += std::string(" (") + prop.name + ")";
  }
  cudaGetLastError();  // clear a non-sticky error so the caller can go on after catching
  throw CudaError(std::string(call) + " failed in " + context + " on " + device_text + ": " +
                  cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + " (" + file + ":" +
                  std::to_string(line) + ")");
}

void check_device_pointer(const void* pointer, std::size_t count, const char* kernel, const char* what) {
  if (count == 0) return;
  if (!pointer)
    throw KernelError(std::string(kernel) + ": " + what + " is null for " + std::to_string(count) +
                      " elements; pass device memory (cudaMalloc)");
  cudaPointerAttributes attributes{};
  SHARDSCOPE_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer), kernel);
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    throw KernelError(std::string(kernel) + ": " + what +
                      " is host memory; the CUDA kernel needs device memory (cudaMalloc), or call the "
                      "cpu_ kernel for host buffers");
}

#ifdef SHARDSCOPE_KERNELS_NVTX
CudaNvtxRange::CudaNvtxRange(const char* name) { nvtxRangePushA(name); }
CudaNvtxRange::~CudaNvtxRange() { nvtxRangePop(); }
#else
CudaNvtxRange::CudaNvtxRange(const char*) {}
CudaNvtxRange::~CudaNvtxRange() = default;
#endif

}  // namespace shardscope::kernels
