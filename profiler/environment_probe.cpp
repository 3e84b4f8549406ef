#include "profiler/environment_probe.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <vector>

#include "kernels/device_query.hpp"
#include "kernels/kernel_registry.hpp"
#include "sessions/build_info.hpp"
#include "sessions/host_probe.hpp"

#ifndef SHARDSCOPE_LIBTORCH_VERSION
#define SHARDSCOPE_LIBTORCH_VERSION ""
#endif
#ifndef SHARDSCOPE_TORCH_CUDA_VERSION
#define SHARDSCOPE_TORCH_CUDA_VERSION ""
#endif
#ifndef SHARDSCOPE_TORCH_NVIDIA_DIR
#define SHARDSCOPE_TORCH_NVIDIA_DIR ""
#endif

namespace shardscope::profiler {
namespace {

// The library LibTorch itself would load: its wheel's copy first (its RPATH), then the system's.
void* open_library(const std::string& wheel_package, const char* soname) {
  std::vector<std::string> candidates;
  const std::string nvidia = SHARDSCOPE_TORCH_NVIDIA_DIR;
  if (!nvidia.empty()) candidates.push_back(nvidia + "/" + wheel_package + "/lib/" + soname);
  candidates.push_back(soname);
  for (const auto& path : candidates)
    if (void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL)) return handle;
  return nullptr;
}

// 91900 -> "9.19.0" (cuDNN 9: major*10000 + minor*100 + patch); NCCL 2.9+ encodes the same way.
std::string dotted_version(long long v) {
  if (v <= 0) return "";
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

sessions::VersionsInfo collect_versions(const kernels::CudaDeviceQuery& cuda) {
  sessions::VersionsInfo v;
  const auto& build = sessions::build_info();
  v.shardscope = build.version;
  v.git_hash = build.git_hash;
  v.compiler = build.compiler;
  v.libtorch = SHARDSCOPE_LIBTORCH_VERSION;
  v.torch_cuda = SHARDSCOPE_TORCH_CUDA_VERSION;
  if (!v.torch_cuda.empty()) {  // a CPU build of LibTorch loads neither
    v.cudnn = cudnn_runtime_version();
    v.nccl = nccl_runtime_version();
  }
  v.cuda_runtime = kernels::cuda_version_string(cuda.runtime_version);
  v.cuda_driver = kernels::cuda_version_string(cuda.driver_version);
  return v;
}

sessions::AcceleratorInfo collect_accelerator(const kernels::CudaDeviceQuery& cuda) {
  sessions::AcceleratorInfo accel;
  accel.backend = cuda.devices.empty() ? "cpu" : "cuda";
  for (const auto& d : cuda.devices)
    accel.gpus.push_back({d.index, d.name, d.total_memory_bytes, d.major, d.minor, d.multiprocessors,
                          kernels::supports_fp16(d.major, d.minor), kernels::supports_bf16(d.major, d.minor)});
  if (accel.gpus.empty()) accel.note = "no CUDA GPU visible (" + cuda.error + "); training runs on CPU with Gloo";
  return accel;
}

}  // namespace

std::string cudnn_runtime_version() {
  void* library = open_library("cudnn", "libcudnn.so.9");
  if (!library) return "";
  using GetVersion = std::size_t (*)();
  const auto get_version = reinterpret_cast<GetVersion>(::dlsym(library, "cudnnGetVersion"));
  const std::string version = get_version ? dotted_version(static_cast<long long>(get_version())) : "";
  ::dlclose(library);
  return version;
}

std::string nccl_runtime_version() {
  void* library = open_library("nccl", "libnccl.so.2");
  if (!library) return "";
  using GetVersion = int (*)(int*);
  const auto get_version = reinterpret_cast<GetVersion>(::dlsym(library, "ncclGetVersion"));
  int code = 0;
  const std::string version = get_version && get_version(&code) == 0 ? dotted_version(code) : "";
  ::dlclose(library);
  return version;
}

sessions::EnvironmentReport collect_environment_report() {
  const kernels::CudaDeviceQuery cuda = kernels::query_cuda_devices();
  sessions::EnvironmentReport report;
  report.versions = collect_versions(cuda);
  report.accelerator = collect_accelerator(cuda);
  for (const auto& k : kernels::list_kernels())
    report.kernels.push_back({k.name, k.family, k.compiled_in, k.compatible, k.detail, k.reason});
  report.host = sessions::probe_host();
  report.checks = sessions::check_host(report.host);
  return report;
}

}  // namespace shardscope::profiler
