#include "kernels/kernel_registry.hpp"

#include "kernels/cpu_features.hpp"

#ifdef SHARDSCOPE_HAS_CUDA
#include "kernels/cuda_probe.hpp"
#endif

namespace shardscope::kernels {
namespace {

struct Family {
  const char* name;
  const char* family;
};

// Report order: CPU kernels, then their CUDA counterparts.
constexpr Family kCpuKernels[] = {
    {"cpu_adam", "optimizer"},      {"cpu_lamb", "optimizer"}, {"cpu_lion", "optimizer"},
    {"cpu_adagrad", "optimizer"},   {"cpu_sgd", "optimizer"},  {"cpu_unscale_inf_check", "precision"},
    {"cpu_norm", "norm"},
};
constexpr Family kCudaKernels[] = {
    {"cuda_fused_adam", "optimizer"}, {"cuda_lamb", "optimizer"}, {"cuda_lion", "optimizer"},
    {"cuda_adagrad", "optimizer"},    {"cuda_sgd", "optimizer"},  {"cuda_unscale_inf_check", "precision"},
    {"cuda_norm", "norm"},           {"cuda_cross_entropy", "loss"}, {"cuda_layer_norm", "layer"},
};

std::string cpu_detail() {
  const SimdLevel active = active_simd_level();
  const SimdLevel best = best_simd_level(cpu_features());
  std::string detail = simd_level_name(active);
  if (active < best) detail += " (CPU offers " + simd_level_name(best) + "; SHARDSCOPE_SIMD asks for less)";
  const int threads = cpu_thread_count();
  return detail + ", OpenMP " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

}  // namespace

std::vector<KernelAvailability> list_kernels() {
  std::vector<KernelAvailability> kernels;
  const std::string detail = cpu_detail();
  for (const Family& k : kCpuKernels) kernels.push_back({k.name, k.family, true, true, detail, ""});
#ifdef SHARDSCOPE_HAS_CUDA
  const CudaKernelProbe probe = probe_cuda_kernels();
  for (const Family& k : kCudaKernels)
    kernels.push_back({k.name, k.family, true, probe.usable, probe.detail, probe.reason});
#else
  for (const Family& k : kCudaKernels)
    kernels.push_back({k.name, k.family, false, false, "",
                       "this build has no CUDA support (configure found no CUDA toolkit)"});
#endif
  return kernels;
}

}  // namespace shardscope::kernels
