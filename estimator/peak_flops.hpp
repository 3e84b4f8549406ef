#pragma once
// The peak a run's MFU is measured against: the datasheet dense figure of the GPU a run's
// environment report names first, for the precision the config trains in. Named with its source, so a session says
// which peak its MFU column used.

#include <optional>
#include <string>

namespace shardscope::estimator {

struct PeakFlops {
  double tflops = 0;
  std::string source;  ///< "datasheet: H200 (SXM5) dense bf16"
};

/// The datasheet peak of the GPU named `device_name` (as the driver names it: "NVIDIA H200") for the
/// precision of `config_json` (a resolved DeepSpeed config: bf16, fp16, else tf32 for fp32
/// training); nullopt for no name (a CPU run), an unknown board or a precision the board has no
/// figure for.
std::optional<PeakFlops> datasheet_peak(const std::string& device_name, const std::string& config_json);

}  // namespace shardscope::estimator
