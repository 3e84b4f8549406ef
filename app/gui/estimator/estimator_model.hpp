#pragma once
// The Estimator page's data, with no widgets: the page's fields fill an estimator::EstimateRequest
// (the very struct `shardscope estimate` parses its flags into, with its defaults), the library
// runs it, and the result becomes rows the table, the chart, the CSV and the clipboard share.
// Runs on a worker thread, so it uses no Qt object that belongs to the GUI.

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimate_request.hpp"

namespace shardscope::gui {

/// One table row: a plan's memory per GPU split by part, per node on the host, and traffic.
struct EstimatorRow {
  std::string plan;         ///< "stage 3, offload_optimizer=cpu, offload_param=none"
  std::string short_label;  ///< "Z3 o:cpu p:cpu" (offload_optimizer, offload_param) for the chart and the table
  estimator::ZeroPlan zero_plan;
  double gpu_params = 0;
  double gpu_gradients = 0;
  double gpu_optimizer = 0;  ///< master weights + optimizer states (what the optimizer owns)
  double gpu_activations = 0;   ///< 0 in the chart when not counted
  std::string activations_unknown;  ///< why they are not counted (no shape): the table says "?", as the CLI's
  double gpu_buffers = 0;
  double gpu_total = 0;         ///< the allocator's peak (the engine's), what the bar's height shows
  double gpu_resident = 0;      ///< model states resident at the peak
  double gpu_peak_activations = 0;  ///< activations and the backward's working sets at the peak
  double gpu_workspace = 0;     ///< cuBLAS workspaces
  double gpu_error_band = 0;    ///< +- the held sweep's mean error, in bytes
  double gpu_device_upper = 0;  ///< the device-level bound the fit is judged on
  bool calibrated = true;       ///< false: the sweep found the arithmetic far off for this plan
  double cpu_per_node = 0;
  double nvme_per_node = 0;
  double comm_bytes_per_gpu = 0;  ///< per optimizer step
  std::optional<double> comm_seconds;
  std::string comm_time_text;  ///< as the CLI's table prints it ("52.4 ms")
  std::optional<bool> fits;    ///< unset when no GPU memory was given
  std::string fit_text;        ///< as the CLI's table prints it ("yes", "no (GPU)", "no (CPU)", "-")
  bool recommended = false;
  bool requested = false;  ///< the plan the DeepSpeed config or --stage asks for
};

/// The result the page shows; `error` set (and nothing else) when the inputs are unusable.
struct EstimatorView {
  std::string error;
  std::optional<estimator::Estimate> estimate;
  std::vector<EstimatorRow> rows;
  std::optional<double> gpu_memory_bytes;  ///< the GPU's memory
  std::optional<double> usable_gpu_bytes;  ///< what fit is judged against: memory less the margin
  std::string recommendation;  ///< the verdict's summary and advice, in plain words
  std::vector<std::string> notes;
  std::string model_summary;  ///< "6.74B parameters (llama-2-7b.json)"
  bool failed = false;        ///< `shardscope estimate` would exit 1 (nothing fits, or the requested plan does not)
};

/// Runs the estimate of `request` and builds the rows; never throws (errors land in `error`).
EstimatorView compute_estimator_view(const estimator::EstimateRequest& request);

/// The rows as CSV, sizes in bytes, one header line.
std::string estimator_rows_csv(const EstimatorView& view);

/// The `shardscope estimate ...` command that prints the same estimate (the page's CLI twin).
std::string estimator_cli_command(const estimator::EstimateRequest& request);

}  // namespace shardscope::gui
