#include "kernels/cuda_probe.hpp"

#include <cuda_runtime.h>

namespace shardscope::kernels {
namespace {

__global__ void probe_kernel(int* out) {
  if (out) *out = 1;
}

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

}  // namespace

CudaKernelProbe probe_cuda_kernels() {
  CudaKernelProbe probe;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    probe.reason = "no CUDA device: " + (status != cudaSuccess ? error_text(status) : std::string("none visible"));
    cudaGetLastError();
    return probe;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const std::string device = "device 0: " + std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                             std::to_string(prop.minor) + ")";
  // Loading the function's attributes forces the module to load and fails with
  // cudaErrorNoKernelImageForDevice when the fatbinary has nothing this GPU can run.
  cudaFuncAttributes attributes{};
  status = cudaFuncGetAttributes(&attributes, probe_kernel);
  if (status != cudaSuccess) {
    probe.reason = device + ": " + error_text(status);
    cudaGetLastError();
    return probe;
  }
  probe.usable = true;
  probe.detail = device;
  return probe;
}

}  // namespace shardscope::kernels
