#pragma once
// CUDA devices as the CUDA runtime sees them, without LibTorch (so the report works even when
// LibTorch's CUDA initialisation would fail). Without CUDA support every call reports no device.

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::kernels {

struct CudaDeviceProperties {
  int index = 0;
  std::string name;
  std::uint64_t total_memory_bytes = 0;
  int major = 0;
  int minor = 0;
  int multiprocessors = 0;
};

struct CudaDeviceQuery {
  bool compiled_with_cuda = false;
  int runtime_version = 0;  ///< e.g. 13000; 0 when not compiled with CUDA
  int driver_version = 0;   ///< 0 when no driver is installed
  std::vector<CudaDeviceProperties> devices;
  std::string error;        ///< why no device could be listed, empty on success
};

/// Lists the visible CUDA devices; never throws.
CudaDeviceQuery query_cuda_devices();

/// DeepSpeed's rules: fp16 from compute capability 7.0, bf16 from 8.0.
bool supports_fp16(int major, int minor);
bool supports_bf16(int major, int minor);

/// 13000 -> "13.0", 12040 -> "12.4" (CUDA's 1000*major + 10*minor encoding).
std::string cuda_version_string(int encoded);

}  // namespace shardscope::kernels
