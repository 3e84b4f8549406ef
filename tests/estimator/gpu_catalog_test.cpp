// The catalog's datasheet peaks and the CUDA device-name lookup (estimator/gpu_catalog.hpp).
#include <gtest/gtest.h>

#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::estimator {
namespace {

std::string matched(const std::string& device_name) {
  const auto gpu = find_gpu_by_device_name(device_name);
  return gpu ? gpu->name : "(none)";
}

TEST(GpuCatalog, DeviceNamesAsTorchReportsThem) {
  EXPECT_EQ(matched("NVIDIA H200"), "H200");
  EXPECT_EQ(matched("NVIDIA H100 80GB HBM3"), "H100-80GB");
  EXPECT_EQ(matched("NVIDIA H100 PCIe"), "H100-PCIe");
  EXPECT_EQ(matched("NVIDIA A100-SXM4-80GB"), "A100-80GB");
  EXPECT_EQ(matched("NVIDIA A100-SXM4-40GB"), "A100-40GB");
  EXPECT_EQ(matched("NVIDIA A100 80GB PCIe"), "A100-PCIe-80GB");
  EXPECT_EQ(matched("NVIDIA L40S"), "L40S");
  EXPECT_EQ(matched("NVIDIA L40"), "L40");
  EXPECT_EQ(matched("NVIDIA L4"), "L4");
  EXPECT_EQ(matched("NVIDIA A10"), "A10");
  EXPECT_EQ(matched("NVIDIA A10G"), "A10G");
  EXPECT_EQ(matched("NVIDIA RTX 6000 Ada Generation"), "RTX-6000-Ada");
  EXPECT_EQ(matched("NVIDIA RTX A6000"), "RTX-A6000");
  EXPECT_EQ(matched("NVIDIA GeForce RTX 4090"), "RTX-4090");
  EXPECT_EQ(matched("NVIDIA GeForce RTX 3090"), "RTX-3090");
  EXPECT_EQ(matched("Tesla V100-SXM2-32GB"), "V100-32GB");
  EXPECT_EQ(matched("Tesla V100-SXM2-16GB"), "V100-16GB");
  EXPECT_EQ(matched("Tesla T4"), "T4");
}

TEST(GpuCatalog, OtherBoardsOfAFamilyDoNotBorrowItsPeaks) {
  // Same chip, other clocks and power: a near match would put the wrong denominator under MFU.
  EXPECT_EQ(matched("NVIDIA H100 NVL"), "(none)");
  EXPECT_EQ(matched("NVIDIA H200 NVL"), "(none)");
  EXPECT_EQ(matched("NVIDIA A100-PCIE-40GB"), "(none)");
  EXPECT_EQ(matched("Tesla V100-PCIE-16GB"), "(none)");
  EXPECT_EQ(matched("NVIDIA "), "(none)");
  EXPECT_EQ(matched(""), "(none)");
  EXPECT_EQ(matched("cpu"), "(none)");
}

TEST(GpuCatalog, DatasheetDensePeaks) {
  const GpuSpec h200 = *find_gpu("H200");
  EXPECT_EQ(h200.form_factor, "SXM5");
  EXPECT_DOUBLE_EQ(h200.dense_bf16_tflops, 989.4);  // 1,979 with sparsity, halved
  EXPECT_DOUBLE_EQ(datasheet_peak_tflops(h200, "bf16"), 989.4);
  EXPECT_DOUBLE_EQ(datasheet_peak_tflops(h200, "fp16"), 989.4);
  EXPECT_DOUBLE_EQ(datasheet_peak_tflops(h200, "tf32"), 494.7);
  EXPECT_DOUBLE_EQ(datasheet_peak_tflops(h200, "fp32"), 67.0);
  EXPECT_DOUBLE_EQ(find_gpu("H100-80GB")->dense_bf16_tflops, 989.4);
  EXPECT_DOUBLE_EQ(find_gpu("H100-PCIe")->dense_bf16_tflops, 756.5);
  EXPECT_DOUBLE_EQ(find_gpu("A100-40GB")->dense_bf16_tflops, 312.0);
  EXPECT_DOUBLE_EQ(find_gpu("A100-80GB")->fp32_tflops, 19.5);
  EXPECT_EQ(find_gpu("A100-80GB")->form_factor, "SXM4");
  EXPECT_DOUBLE_EQ(find_gpu("V100-32GB")->dense_fp16_tflops, 125.0);
  EXPECT_EQ(find_gpu("V100-32GB")->dense_bf16_tflops, 0);  // Volta has no bf16 tensor cores
  EXPECT_EQ(find_gpu("A10G")->dense_bf16_tflops, 0);       // no NVIDIA datasheet
  for (const auto& gpu : gpu_catalog()) {
    EXPECT_FALSE(gpu.form_factor.empty()) << gpu.name;
    // Dense 16-bit tensor math is never below plain FP32 where both are known.
    if (gpu.dense_fp16_tflops > 0) {
      EXPECT_GT(gpu.dense_fp16_tflops, gpu.fp32_tflops) << gpu.name;
    }
    if (gpu.dense_bf16_tflops > 0) {
      EXPECT_DOUBLE_EQ(gpu.dense_bf16_tflops, gpu.dense_fp16_tflops) << gpu.name;
    }
  }
  EXPECT_THROW(datasheet_peak_tflops(h200, "fp8"), EstimatorError);
}

}  // namespace
}  // namespace shardscope::estimator
