#pragma once
// From a DeepSpeed config, as the configs library resolves it (defaults, "auto", batch solver),
// to EstimateOptions: the ZeRO stage and offload devices become the requested plan; precision,
// master-weight and optimizer-state options, optimizer, micro-batch, gradient accumulation,
// buckets and cpu_checkpointing are taken over, so the estimate matches what would run.

#include <string>
#include <vector>

#include "configs/config_model.hpp"
#include "configs/deepspeed_version.hpp"
#include "estimator/estimate_options.hpp"

namespace shardscope::estimator {

/// Copies what the estimate depends on from `config` into `options`; returns notes about what
/// was interpreted (e.g. offload_param ignored below stage 3, optimizer not in the config).
std::vector<std::string> apply_resolved_config(const configs::ResolvedConfig& config, EstimateOptions& options);

/// Reads and validates `path` for a world of options.cluster.total_gpus() ranks under the rules of
/// DeepSpeed `version`, then applies it. Throws EstimatorError listing the validator's errors when
/// that DeepSpeed would reject the file.
std::vector<std::string> apply_config_file(const std::string& path, EstimateOptions& options,
                                           configs::DeepSpeedVersion version = configs::DeepSpeedVersion::k0_19_7);

}  // namespace shardscope::estimator
