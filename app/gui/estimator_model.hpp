#pragma once
// The Estimator page's data, with no widgets: inputs as a plain struct (what the page's fields
// hold), run through the same estimator library calls as `shardscope estimate`, and turned into
// rows the table, the chart, the CSV and the clipboard share. Runs on a worker thread, so it uses
// no Qt object that belongs to the GUI.

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimate.hpp"

namespace shardscope::gui {

/// How the model is given: the four ways `shardscope estimate` accepts.
enum class ModelInputKind { kParamCount, kShape, kHfConfig, kSafetensors };

/// Everything the Estimator page's fields hold; one field per CLI flag.
struct EstimatorInputs {
  ModelInputKind model_kind = ModelInputKind::kParamCount;
  double params = 7e9;         ///< --params
  double largest_layer = 0;    ///< --largest-layer (0 = unknown)
  estimator::TransformerShape shape;  ///< --layout/--layers/--hidden/... (seq_len comes from seq_len below)
  std::string hf_config_path;   ///< --hf-config
  std::string safetensors_path; ///< --safetensors (with hf_config_path set: shape from the config)
  int gpus_per_node = 8;
  int nodes = 1;
  std::string gpu_name;                 ///< --gpu; empty = custom_gpu_memory_bytes
  double custom_gpu_memory_bytes = 0;   ///< --gpu-mem (0 = not judged)
  double cpu_memory_bytes = 0;          ///< --cpu-mem per node (0 = unknown)
  long long micro_batch = 1;
  long long seq_len = 2048;             ///< 0 = the model's maximum (config.json models)
  std::string deepspeed_config_path;    ///< --config: stage, offload, precision, buckets
};

/// One table row: a plan's memory per GPU split by part, per node on the host, and traffic.
struct EstimatorRow {
  std::string plan;  ///< "stage 3, offload_optimizer=cpu, offload_param=none"
  std::string short_label;  ///< "Z3 +opt cpu" for the chart's axis
  estimator::ZeroPlan zero_plan;
  double gpu_params = 0;
  double gpu_gradients = 0;
  double gpu_optimizer = 0;  ///< master weights + optimizer states (what the optimizer owns)
  double gpu_activations = 0;
  double gpu_buffers = 0;
  double gpu_total = 0;
  double cpu_per_node = 0;
  double nvme_per_node = 0;
  double comm_bytes_per_gpu = 0;  ///< per optimizer step
  std::optional<double> comm_seconds;
  std::optional<bool> fits;  ///< unset when no GPU memory was given
  bool recommended = false;
  bool requested = false;  ///< the plan the DeepSpeed config asks for
};

/// The result the page shows; `error` set (and nothing else) when the inputs are unusable.
struct EstimatorView {
  std::string error;
  std::optional<estimator::Estimate> estimate;
  std::vector<EstimatorRow> rows;
  std::optional<double> gpu_memory_bytes;  ///< the line on the chart
  double usable_gpu_bytes = 0;
  std::string recommendation;  ///< the verdict's summary and advice, in plain words
  std::vector<std::string> notes;
  std::string model_summary;  ///< "7.00B parameters (param count)"
};

/// The model the inputs describe; throws estimator::EstimatorError for bad values or files.
estimator::ModelDescription describe_model(const EstimatorInputs& inputs);

/// The EstimateOptions the inputs describe, the DeepSpeed config applied first as the CLI does;
/// appends the config adapter's notes to `notes`.
estimator::EstimateOptions estimate_options(const EstimatorInputs& inputs, std::vector<std::string>& notes);

/// Runs the estimate and builds the rows; never throws (errors land in `error`).
EstimatorView compute_estimator_view(const EstimatorInputs& inputs);

/// The rows as CSV, sizes in bytes, one header line.
std::string estimator_rows_csv(const EstimatorView& view);

/// The `shardscope estimate ...` command that prints the same estimate (the page's CLI twin).
std::string estimator_cli_command(const EstimatorInputs& inputs);

}  // namespace shardscope::gui
