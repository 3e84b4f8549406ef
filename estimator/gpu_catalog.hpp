#pragma once
// GPUs a user can name instead of a memory size (`--gpu H100-80GB`). Memory is what nvidia-smi
// reports as memory.total (MiB), which is what a process can see before the CUDA context; the
// marketing size ("141 GB" for H200) is kept beside it. Bandwidth is the nominal per-GPU,
// one-direction intra-node link (NVLink for SXM parts, PCIe x16 otherwise), a ceiling that
// collectives reach 70-90% of.

#include <optional>
#include <string>
#include <vector>

namespace shardscope::estimator {

struct GpuSpec {
  std::string name;             ///< canonical, e.g. "H100-80GB"
  std::vector<std::string> aliases;
  double memory_bytes = 0;      ///< nvidia-smi memory.total
  std::string marketing_size;   ///< "80 GB"
  double link_bandwidth = 0;    ///< bytes/s per GPU, one direction, intra-node
  std::string link;             ///< "NVLink 4", "PCIe 4.0 x16"
};

/// Every GPU the catalog knows, in the order `--list-gpus` prints them.
const std::vector<GpuSpec>& gpu_catalog();

/// The GPU named `name` (case, spaces, dashes and underscores ignored); nullopt if unknown.
std::optional<GpuSpec> find_gpu(const std::string& name);

/// Like find_gpu but throws EstimatorError naming `what`, with the closest name suggested.
GpuSpec require_gpu(const std::string& name, const std::string& what);

}  // namespace shardscope::estimator
