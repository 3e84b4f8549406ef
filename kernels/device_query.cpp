#include "kernels/device_query.hpp"

#ifdef SHARDSCOPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shardscope::kernels {

bool supports_fp16(int major, int /*minor*/) { return major >= 7; }
bool supports_bf16(int major, int /*minor*/) { return major >= 8; }

std::string cuda_version_string(int encoded) {
  if (encoded <= 0) return "";
  return std::to_string(encoded / 1000) + "." + std::to_string((encoded % 1000) / 10);
}

CudaDeviceQuery query_cuda_devices() {
  CudaDeviceQuery query;
#ifdef SHARDSCOPE_HAS_CUDA
  query.compiled_with_cuda = true;
  cudaRuntimeGetVersion(&query.runtime_version);
  if (cudaDriverGetVersion(&query.driver_version) != cudaSuccess) query.driver_version = 0;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    query.error = query.driver_version == 0
                      ? std::string("no NVIDIA driver is loaded, ") + cudaGetErrorName(status)
                      : std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later CUDA calls in this process are not poisoned
    return query;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    query.devices.push_back({i, prop.name, static_cast<std::uint64_t>(prop.totalGlobalMem), prop.major,
                             prop.minor, prop.multiProcessorCount});
  }
  if (count == 0) query.error = "the CUDA runtime found no device";
#else
  query.error = "this build has no CUDA support (configure found no CUDA toolkit)";
#endif
  return query;
}

}  // namespace shardscope::kernels
