// kernel_registry: the table agrees with cpu_features (SIMD level, threads) and with device_query
// (CUDA compiled in, device present), whatever machine runs it.
#include "kernels/kernel_registry.hpp"

#include <gtest/gtest.h>

#include <set>

#include "kernels/cpu_features.hpp"
#include "kernels/device_query.hpp"

namespace shardscope::kernels {
namespace {

const KernelAvailability* find(const std::vector<KernelAvailability>& kernels, const std::string& name) {
  for (const auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

TEST(KernelRegistry, ListsEveryFamilyOnce) {
  const auto kernels = list_kernels();
  std::set<std::string> names;
  for (const auto& k : kernels) EXPECT_TRUE(names.insert(k.name).second) << "duplicate " << k.name;
  for (const char* name : {"cpu_adam", "cpu_lamb", "cpu_lion", "cpu_adagrad", "cpu_sgd", "cpu_unscale_inf_check",
                           "cpu_norm", "cuda_fused_adam", "cuda_lamb", "cuda_lion", "cuda_adagrad", "cuda_sgd",
                           "cuda_unscale_inf_check", "cuda_norm", "cuda_cross_entropy", "cuda_layer_norm"})
    EXPECT_TRUE(names.count(name)) << name << " missing from the kernels table";
  for (const auto& k : kernels) {
    EXPECT_TRUE(k.family == "optimizer" || k.family == "precision" || k.family == "norm" || k.family == "loss" ||
                k.family == "layer")
        << k.name;
    if (!k.compatible) {
      EXPECT_FALSE(k.reason.empty()) << k.name << " is unusable without a reason";
    }
    if (!k.compiled_in) {
      EXPECT_FALSE(k.compatible) << k.name;
    }
  }
}

TEST(KernelRegistry, CpuRowsNameTheLevelAndThreadsInUse) {
  const auto kernels = list_kernels();
  const KernelAvailability* adam = find(kernels, "cpu_adam");
  ASSERT_NE(adam, nullptr);
  EXPECT_TRUE(adam->compiled_in);
  EXPECT_TRUE(adam->compatible);
  EXPECT_EQ(adam->detail.rfind(simd_level_name(active_simd_level()), 0), 0u) << adam->detail;
  const std::string threads = "OpenMP " + std::to_string(cpu_thread_count()) + " thread";
  EXPECT_NE(adam->detail.find(threads), std::string::npos) << adam->detail;
}

TEST(KernelRegistry, CudaRowsAgreeWithTheDeviceQuery) {
  const auto kernels = list_kernels();
  const KernelAvailability* adam = find(kernels, "cuda_fused_adam");
  ASSERT_NE(adam, nullptr);
  const CudaDeviceQuery query = query_cuda_devices();
  EXPECT_EQ(adam->compiled_in, query.compiled_with_cuda);
  if (!query.compiled_with_cuda) {
    EXPECT_NE(adam->reason.find("no CUDA support"), std::string::npos) << adam->reason;
  } else if (query.devices.empty()) {
    EXPECT_FALSE(adam->compatible);
    EXPECT_NE(adam->reason.find("no CUDA device"), std::string::npos) << adam->reason;
  } else {
    // A device is there: the kernels load unless the fatbinary lacks its architecture.
    EXPECT_EQ(adam->compatible, adam->reason.empty()) << adam->reason;
    EXPECT_NE(adam->detail.find(query.devices[0].name), std::string::npos) << adam->detail;
  }
}

}  // namespace
}  // namespace shardscope::kernels
