#include "estimator/gpu_catalog.hpp"

#include <cctype>

#include "configs/did_you_mean.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

constexpr double kMiB = 1048576.0;
constexpr double kNvlink2 = 150e9;
constexpr double kNvlink3 = 300e9;
constexpr double kNvlink4 = 450e9;
constexpr double kPcie3 = 16e9;
constexpr double kPcie4 = 32e9;
constexpr double kPcie5 = 64e9;

std::string normalize(const std::string& name) {
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = {
      {"H200", {"H200-141GB", "H200-SXM"}, 143771 * kMiB, "141 GB", kNvlink4, "NVLink 4"},
      {"H100-80GB", {"H100", "H100-SXM", "H100-SXM5", "H100-80GB-HBM3"}, 81559 * kMiB, "80 GB", kNvlink4, "NVLink 4"},
      {"H100-PCIe", {"H100-PCIE-80GB"}, 81559 * kMiB, "80 GB", kPcie5, "PCIe 5.0 x16"},
      {"A100-80GB", {"A100", "A100-SXM4-80GB", "A100-SXM-80GB"}, 81920 * kMiB, "80 GB", kNvlink3, "NVLink 3"},
      {"A100-40GB", {"A100-SXM4-40GB", "A100-SXM-40GB"}, 40960 * kMiB, "40 GB", kNvlink3, "NVLink 3"},
      {"A100-PCIe-80GB", {"A100-PCIE"}, 81920 * kMiB, "80 GB", kPcie4, "PCIe 4.0 x16"},
      {"L40S", {}, 46068 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16"},
      {"L40", {}, 46068 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16"},
      {"RTX-6000-Ada", {"RTX6000Ada", "RTX-6000-Ada-Generation"}, 49140 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16"},
      {"RTX-A6000", {"A6000"}, 49140 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16"},
      {"RTX-4090", {"4090", "GeForce-RTX-4090"}, 24564 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16 (no P2P)"},
      {"RTX-3090", {"3090", "GeForce-RTX-3090"}, 24576 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16"},
      {"A10G", {}, 23028 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16"},
      {"A10", {}, 23028 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16"},
      {"L4", {}, 23034 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16"},
      {"V100-32GB", {"V100-SXM2-32GB"}, 32768 * kMiB, "32 GB", kNvlink2, "NVLink 2"},
      {"V100-16GB", {"V100", "V100-SXM2-16GB"}, 16384 * kMiB, "16 GB", kNvlink2, "NVLink 2"},
      {"T4", {"Tesla-T4"}, 15360 * kMiB, "16 GB", kPcie3, "PCIe 3.0 x16"},
  };
  return catalog;
}

std::optional<GpuSpec> find_gpu(const std::string& name) {
  const std::string key = normalize(name);
  for (const auto& gpu : gpu_catalog()) {
    if (normalize(gpu.name) == key) return gpu;
    for (const auto& alias : gpu.aliases)
      if (normalize(alias) == key) return gpu;
  }
  return std::nullopt;
}

GpuSpec require_gpu(const std::string& name, const std::string& what) {
  if (auto gpu = find_gpu(name)) return *gpu;
  std::vector<std::string> names;
  for (const auto& gpu : gpu_catalog()) names.push_back(gpu.name);
  std::string message = what + ": unknown GPU '" + name + "'";
  if (auto guess = configs::closest_match(name, names)) message += "; did you mean '" + *guess + "'?";
  throw EstimatorError(message + " (see --list-gpus, or give the memory with --gpu-mem 80GiB)");
}

}  // namespace shardscope::estimator
