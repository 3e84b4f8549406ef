#pragma once
// GPUs a user can name instead of a memory size (`--gpu H100-80GB`). Memory is what nvidia-smi
// reports as memory.total (MiB), which is what a process can see before the CUDA context; the
// marketing size ("141 GB" for H200) is kept beside it. Bandwidth is the nominal per-GPU,
// one-direction intra-node link (NVLink for SXM parts, PCIe x16 otherwise), a ceiling that
// collectives reach 70-90% of. Peak throughputs are NVIDIA's datasheet figures for dense math
// (the "with sparsity" figures halved), tensor cores with FP32 accumulation for 16-bit formats;
// they are what MFU divides by when no peak was measured (docs/profiler.md, "Datasheet peaks").

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
  std::string form_factor;      ///< the board the figures are for: "SXM5", "PCIe", ...
  // Datasheet peaks in TFLOP/s, dense (no structured sparsity); 0 = the part has no such tensor-
  // core path (V100 and T4 have no bf16) or NVIDIA publishes no datasheet (A10G).
  double dense_bf16_tflops = 0;  ///< bf16 tensor cores, FP32 accumulate
  double dense_fp16_tflops = 0;  ///< fp16 tensor cores, FP32 accumulate
  double dense_tf32_tflops = 0;  ///< tf32 tensor cores (fp32 matmuls when TF32 is allowed)
  double fp32_tflops = 0;        ///< plain FP32 on CUDA cores (torch's default for fp32 matmuls)
};

/// Every GPU the catalog knows, in the order `--list-gpus` prints them.
const std::vector<GpuSpec>& gpu_catalog();

/// The GPU named `name` (case, spaces, dashes and underscores ignored); nullopt if unknown.
std::optional<GpuSpec> find_gpu(const std::string& name);

/// The catalog entry of a CUDA device name as torch / nvidia-smi report it ("NVIDIA H200",
/// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla T4"); nullopt for a part the catalog
/// lacks (e.g. "NVIDIA H100 NVL", "NVIDIA A100-PCIE-40GB"), never a near miss with other peaks.
std::optional<GpuSpec> find_gpu_by_device_name(const std::string& cuda_device_name);

/// The datasheet dense peak for training in `precision` ("bf16", "fp16", "fp32", "tf32"), in
/// TFLOP/s; 0 when the catalog has no figure. Throws EstimatorError for another precision name.
double datasheet_peak_tflops(const GpuSpec& gpu, const std::string& precision);

/// Like find_gpu but throws EstimatorError naming `what`, with the closest name suggested.
GpuSpec require_gpu(const std::string& name, const std::string& what);

}  // namespace shardscope::estimator
