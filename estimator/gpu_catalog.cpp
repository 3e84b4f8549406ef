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
  // Peaks: {form factor, bf16, fp16, tf32, fp32} from NVIDIA's datasheets (H100/H200, A100, L40S,
  // L40, L4, A10, V100, T4) and architecture whitepapers (Ada and Ampere GA102 for the RTX parts,
  // whose GeForce boards run 16-bit tensor math with FP32 accumulation at half rate).
  static const std::vector<GpuSpec> catalog = {
      {"H200", {"H200-141GB", "H200-SXM"}, 143771 * kMiB, "141 GB", kNvlink4, "NVLink 4",
       "SXM5", 989.4, 989.4, 494.7, 67.0},
      {"H100-80GB", {"H100", "H100-SXM", "H100-SXM5", "H100-80GB-HBM3"}, 81559 * kMiB, "80 GB", kNvlink4, "NVLink 4",
       "SXM5", 989.4, 989.4, 494.7, 67.0},
      {"H100-PCIe", {"H100-PCIE-80GB"}, 81559 * kMiB, "80 GB", kPcie5, "PCIe 5.0 x16",
       "PCIe", 756.5, 756.5, 378.0, 51.0},
      {"A100-80GB", {"A100", "A100-SXM4-80GB", "A100-SXM-80GB"}, 81920 * kMiB, "80 GB", kNvlink3, "NVLink 3",
       "SXM4", 312.0, 312.0, 156.0, 19.5},
      {"A100-40GB", {"A100-SXM4-40GB", "A100-SXM-40GB"}, 40960 * kMiB, "40 GB", kNvlink3, "NVLink 3",
       "SXM4", 312.0, 312.0, 156.0, 19.5},
      {"A100-PCIe-80GB", {"A100-PCIE", "A100-80GB-PCIe"}, 81920 * kMiB, "80 GB", kPcie4, "PCIe 4.0 x16",
       "PCIe", 312.0, 312.0, 156.0, 19.5},
      {"L40S", {}, 46068 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16", "PCIe", 362.05, 362.05, 183.0, 91.6},
      {"L40", {}, 46068 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16", "PCIe", 181.05, 181.05, 90.5, 90.5},
      {"RTX-6000-Ada", {"RTX6000Ada", "RTX-6000-Ada-Generation"}, 49140 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16",
       "PCIe workstation", 364.2, 364.2, 182.1, 91.1},
      {"RTX-A6000", {"A6000"}, 49140 * kMiB, "48 GB", kPcie4, "PCIe 4.0 x16",
       "PCIe workstation", 154.8, 154.8, 77.4, 38.7},
      {"RTX-4090", {"4090", "GeForce-RTX-4090"}, 24564 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16 (no P2P)",
       "PCIe GeForce", 165.2, 165.2, 82.6, 82.6},
      {"RTX-3090", {"3090", "GeForce-RTX-3090"}, 24576 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16",
       "PCIe GeForce", 71.0, 71.0, 35.6, 35.6},
      // AWS's variant of the A10: NVIDIA publishes no datasheet for it, so no peak is claimed.
      {"A10G", {}, 23028 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16", "PCIe (AWS)", 0, 0, 0, 0},
      {"A10", {}, 23028 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16", "PCIe", 125.0, 125.0, 62.5, 31.2},
      {"L4", {}, 23034 * kMiB, "24 GB", kPcie4, "PCIe 4.0 x16", "PCIe low-profile", 121.0, 121.0, 60.0, 30.3},
      // Volta and Turing tensor cores have no bf16 (and no tf32) path.
      {"V100-32GB", {"V100-SXM2-32GB"}, 32768 * kMiB, "32 GB", kNvlink2, "NVLink 2", "SXM2", 0, 125.0, 0, 15.7},
      {"V100-16GB", {"V100", "V100-SXM2-16GB"}, 16384 * kMiB, "16 GB", kNvlink2, "NVLink 2", "SXM2", 0, 125.0, 0, 15.7},
      {"T4", {"Tesla-T4"}, 15360 * kMiB, "16 GB", kPcie3, "PCIe 3.0 x16", "PCIe low-profile", 0, 65.0, 0, 8.1},
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

std::optional<GpuSpec> find_gpu_by_device_name(const std::string& cuda_device_name) {
  // torch.cuda.get_device_name() is the marketing name behind a vendor prefix ("NVIDIA", or
  // "Tesla" on Volta/Turing); what remains is one of the catalog's names or aliases. Matching
  // is exact after normalising, so "H100 NVL" or "A100-PCIE-40GB" (other peaks) find nothing.
  std::string name = cuda_device_name;
  for (const char* prefix : {"NVIDIA ", "Tesla "}) {
    const std::string p = prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) name = name.substr(p.size());
  }
  if (normalize(name).empty()) return std::nullopt;
  return find_gpu(name);
}

double datasheet_peak_tflops(const GpuSpec& gpu, const std::string& precision) {
  if (precision == "bf16") return gpu.dense_bf16_tflops;
  if (precision == "fp16") return gpu.dense_fp16_tflops;
  if (precision == "tf32") return gpu.dense_tf32_tflops;
  if (precision == "fp32") return gpu.fp32_tflops;
  throw EstimatorError("datasheet peak: unknown precision '" + precision + "' (use bf16, fp16, tf32 or fp32)");
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
