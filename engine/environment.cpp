#include "engine/environment.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#ifdef SHARDSCOPE_TORCH_HAS_NCCL
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

#include <cstdlib>

#include "aio/backend_probe.hpp"
#include "kernels/device_query.hpp"
#include "kernels/kernel_registry.hpp"
#include "sessions/build_info.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::engine {
namespace {

// cuDNN encodes 9.19.0 as 91900 (major*10000 + minor*100 + patch) since cuDNN 9.
std::string cudnn_version_string(long v) {
  if (v <= 0) return "";
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

sessions::VersionsInfo collect_versions(const kernels::CudaDeviceQuery& cuda) {
  sessions::VersionsInfo v;
  const auto& build = sessions::build_info();
  v.shardscope = build.version;
  v.git_hash = build.git_hash;
  v.compiler = build.compiler;
  v.libtorch = TORCH_VERSION;
  const auto& hooks = at::detail::getCUDAHooks();
  if (hooks.hasCUDART()) {
    v.torch_cuda = kernels::cuda_version_string(static_cast<int>(hooks.versionCUDART()));
    try {
      v.cudnn = cudnn_version_string(hooks.versionCuDNN());
    } catch (const std::exception&) {
      v.cudnn = "";  // the CPU build throws: no cuDNN
    }
  }
#ifdef SHARDSCOPE_TORCH_HAS_NCCL
  v.nccl = c10d::getNcclVersion();
#endif
  v.cuda_runtime = kernels::cuda_version_string(cuda.runtime_version);
  v.cuda_driver = kernels::cuda_version_string(cuda.driver_version);
  return v;
}

sessions::AcceleratorInfo collect_accelerator(const kernels::CudaDeviceQuery& cuda) {
  sessions::AcceleratorInfo accel;
  accel.backend = cuda.devices.empty() ? "cpu" : "cuda";
  for (const auto& d : cuda.devices)
    accel.gpus.push_back({d.index, d.name, d.total_memory_bytes, d.major, d.minor, d.multiprocessors,
                          kernels::supports_fp16(d.major, d.minor),
                          kernels::supports_bf16(d.major, d.minor)});
  if (accel.gpus.empty())
    accel.note = "no CUDA GPU visible (" + cuda.error + "); training runs on CPU with Gloo";
  return accel;
}

}  // namespace

sessions::EnvironmentReport collect_environment_report() {
  const kernels::CudaDeviceQuery cuda = kernels::query_cuda_devices();
  sessions::EnvironmentReport report;
  report.versions = collect_versions(cuda);
  report.accelerator = collect_accelerator(cuda);
  for (const auto& k : kernels::list_kernels())
    report.kernels.push_back({k.name, k.family, k.compiled_in, k.compatible, k.detail, k.reason});
  // DeepSpeed's async_io op line, per backend, tried for real (a queue and an O_DIRECT round trip).
  const char* tmp = std::getenv("TMPDIR");
  for (const auto backend : aio::all_io_backends()) {
    const auto probe = aio::probe_io_backend(backend, tmp && *tmp ? tmp : "/tmp");
    report.kernels.push_back({backend == aio::IoBackend::kLibaio ? "async_io" : "async_io_uring", "io",
                              probe.compiled_in, probe.works, probe.detail, probe.reason});
  }
  report.host = sessions::probe_host();
  report.checks = sessions::check_host(report.host);
  return report;
}

}  // namespace shardscope::engine
