#include "estimator/peak_flops.hpp"

#include <nlohmann/json.hpp>

#include "estimator/gpu_catalog.hpp"

namespace shardscope::estimator {
namespace {

bool block_enabled(const nlohmann::json& config, const char* key) {
  return config.contains(key) && config[key].is_object() && config[key].value("enabled", false);
}

}  // namespace

std::optional<PeakFlops> datasheet_peak(const std::string& device_name, const std::string& config_json) {
  if (device_name.empty()) return std::nullopt;
  const auto gpu = find_gpu_by_device_name(device_name);
  if (!gpu) return std::nullopt;
  const auto config = nlohmann::json::parse(config_json, nullptr, false);
  std::string precision = "tf32";  // fp32 training: torch's matmuls may use TF32 tensor cores
  if (!config.is_discarded()) {
    if (block_enabled(config, "bf16") || block_enabled(config, "bfloat16")) precision = "bf16";
    else if (block_enabled(config, "fp16")) precision = "fp16";
  }
  const double tflops = datasheet_peak_tflops(*gpu, precision);
  if (tflops <= 0) return std::nullopt;
  return PeakFlops{tflops, "datasheet: " + gpu->name + (gpu->form_factor.empty() ? "" : " (" + gpu->form_factor + ")") +
                               " dense " + precision};
}

}  // namespace shardscope::estimator
