#pragma once
// The peak a run's MFU is measured against: the datasheet dense figure of the GPU the environment
// report names, for the precision the config trains in. Named with its source, so a session says
// which peak its MFU column used.

#include <optional>
#include <string>

#include "sessions/environment_report.hpp"

namespace shardscope::engine {

struct PeakFlops {
  double tflops = 0;
  std::string source;  ///< "datasheet: H200 (SXM5) dense bf16"
};

/// The datasheet peak of the first GPU of `report` for the precision of `config_json` (a resolved
/// DeepSpeed config: bf16, fp16, else tf32 for fp32 training); nullopt for a CPU run, an unknown
/// board or a precision the board has no figure for.
std::optional<PeakFlops> datasheet_peak(const sessions::EnvironmentReport& report, const std::string& config_json);

}  // namespace shardscope::engine
