#pragma once
// What the estimator predicts one rank of a training run holds on its GPU, for the run's own
// config and model: model states, ZeRO buffers and activations, by the same arithmetic
// `shardscope estimate` uses (estimator/), so the end-of-run report can set the prediction
// beside the measured peak (issue 8, item 6; docs/profiler.md, "Memory prediction").

#include <cstdint>
#include <string>

#include "configs/config_model.hpp"
#include "engine/models/model_spec.hpp"

namespace shardscope::engine {

/// Predicted bytes per GPU (one rank) and how they were reckoned.
struct MemoryPrediction {
  double model_states_bytes = 0;  ///< 16-bit/fp32 params, gradients, master, optimizer states on the GPU
  double activations_bytes = 0;   ///< activations kept for backward at the peak
  double buffers_bytes = 0;       ///< reduce / all-gather buckets, stage 3 working set and prefetch
  double total_bytes = 0;
  std::string explanation;        ///< the plan, the formulas behind each part, the assumptions
};

/// The estimator's prediction for `spec` trained under `config` (stage, offload, precision,
/// optimizer, micro-batch, buckets) on `world_size` ranks; throws ModelError for a bad spec and
/// EstimatorError for a config the estimator rejects.
MemoryPrediction predict_memory(const configs::ResolvedConfig& config, const ModelSpec& spec, int world_size,
                                bool activation_checkpointing);

/// One aligned block: predicted parts, predicted total, measured peak, difference in GiB and %.
std::string measured_vs_predicted_text(const MemoryPrediction& prediction, std::int64_t measured_peak_bytes);

}  // namespace shardscope::engine
