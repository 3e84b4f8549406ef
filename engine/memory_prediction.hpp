#pragma once
// What the estimator predicts one rank of a training run holds on its GPU, for the run's own
// config and model: model states, ZeRO buffers and activations, by the same arithmetic
// `shardscope estimate` uses (estimator/), so the end-of-run report can set the prediction
// beside the measured peak (issue 8, item 6; docs/profiler.md, "Memory prediction").

#include <cstdint>
#include <optional>
#include <string>

#include "configs/config_model.hpp"
#include "engine/models/model_spec.hpp"

namespace shardscope::sessions {
class Store;
}
namespace shardscope::estimator {
struct ModelDescription;
struct EstimateOptions;
}

namespace shardscope::engine {

/// Predicted bytes per GPU (one rank) and how they were reckoned.
struct MemoryPrediction {
  double model_states_bytes = 0;  ///< 16-bit/fp32 params, gradients, master, optimizer states on the GPU
  double activations_bytes = 0;   ///< activations kept for backward at the peak
  double buffers_bytes = 0;       ///< reduce / all-gather buckets, stage 3 working set and prefetch
  double total_bytes = 0;         ///< the allocator's peak: states + buffers + activations + working set
  double reserved_bytes = 0;      ///< the caching allocator's reserved peak
  double device_bytes = 0;        ///< the device-level peak (cudaMemGetInfo), the CUDA context included
  double expected_error = 0;      ///< the sweep's mean absolute error of total_bytes, a fraction
  double host_peak_bytes = 0;     ///< this rank's host peak (resident set) on a GPU run
  double host_pinned_bytes = 0;   ///< of which page-locked buffers, as CUDA's host allocator holds them
  double nvme_bytes = 0;          ///< this rank's swap files
  std::string explanation;        ///< the plan, the formulas behind each part, the assumptions
};

/// The estimator's prediction for `spec` trained under `config` (stage, offload, precision,
/// optimizer, micro-batch, buckets) on `world_size` ranks; throws ModelError for a bad spec and
/// EstimatorError for a config the estimator rejects.
MemoryPrediction predict_memory(const configs::ResolvedConfig& config, const ModelSpec& spec, int world_size,
                                bool activation_checkpointing);

/// The estimator's inputs for a run, as predict_memory builds them: the model of `spec`, and the
/// options of `config` on `world_size` ranks with the config's plan as the requested one.
estimator::ModelDescription run_model_description(const ModelSpec& spec);
estimator::EstimateOptions run_estimate_options(const configs::ResolvedConfig& config, const ModelSpec& spec,
                                                int world_size, bool activation_checkpointing);

/// The peaks a GPU run is judged by, and the host's: the allocator's peak, its reserved peak, the
/// device-level peak (the reserved peak plus what lives outside the allocator: the CUDA context,
/// library handles) and the process's peak resident set (VmHWM). 0 = not measured.
struct MeasuredPeaks {
  std::int64_t allocated_peak = 0, reserved_peak = 0, device_peak = 0, host_peak_rss = 0;
};

/// One aligned block: predicted parts, predicted total, measured peak, difference in GiB and %.
std::string measured_vs_predicted_text(const MemoryPrediction& prediction, std::int64_t measured_peak_bytes);
/// The same for a GPU run's three peaks: allocated, reserved and device-level, each beside its prediction.
std::string measured_vs_predicted_text(const MemoryPrediction& prediction, const MeasuredPeaks& peaks);
/// A CPU run: the engine counts its own tensors, which are the model states, so only those compare.
std::string model_states_vs_held_text(const MemoryPrediction& prediction, std::int64_t held_bytes);

/// "[memory measured] allocated_peak_bytes=N reserved_peak_bytes=N device_peak_bytes=N
/// host_peak_rss_bytes=N": the line `shardscope train` logs at its end (rank 0), which the
/// estimator's GPU sweep (scripts/estimator_sweep_gpu.py) reads.
std::string measured_peaks_record(const MeasuredPeaks& peaks);

/// The prediction as one log line a session keeps: "[memory prediction] model_states_bytes=N
/// buffers_bytes=N activations_bytes=N total_bytes=N" (what `shardscope train` logs at its start).
std::string memory_prediction_record(const MemoryPrediction& prediction);
/// Reads such a line back; nullopt for any other line.
std::optional<MemoryPrediction> parse_memory_prediction_record(const std::string& line);

/// A recorded run's prediction beside what it measured (rank 0): the peak allocated bytes, and
/// the model states as the bytes still allocated at the end of a step (median over the steps
/// after `warmup`; activations and the reduction buffers are gone by then).
struct SessionMemoryReport {
  MemoryPrediction prediction;
  std::optional<std::int64_t> measured_peak_bytes;
  std::optional<std::int64_t> measured_step_end_bytes;
};
/// The report of session `session_id`, or nullopt when the run logged no prediction (older runs).
std::optional<SessionMemoryReport> session_memory_report(sessions::Store& store, std::int64_t session_id,
                                                         std::int64_t warmup_steps);
/// Its table: each part predicted, the measured model states and peak, and the differences in %.
std::string session_memory_report_text(const SessionMemoryReport& report);

}  // namespace shardscope::engine
