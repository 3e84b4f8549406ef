#pragma once
// The inputs of one estimate exactly as `shardscope estimate` takes them: one field per flag, and
// unset means "flag not given", so the DeepSpeed config's value (--config) and then the
// EstimateOptions default apply. The CLI parses its flags into this struct and the GUI's
// Estimator page fills it from its fields; both run it through estimate_request(), so the same
// inputs give the same verdict, and estimate_request_arguments() is the page's CLI twin.

#include <optional>
#include <string>
#include <vector>

#include "configs/deepspeed_version.hpp"
#include "estimator/estimate.hpp"

namespace shardscope::estimator {

struct EstimateRequest {
  // The model: kParamCount (--params [--largest-layer]), kShape (--layers --hidden --heads --vocab
  // [--layout --kv-heads ...]), kHfConfig (--hf-config [--hf-layout]), kSafetensors (--safetensors
  // [--hf-config for the shape]).
  ModelSource source = ModelSource::kParamCount;
  std::optional<double> params;         ///< --params
  std::optional<double> largest_layer;  ///< --largest-layer
  std::optional<TransformerLayout> layout;  ///< --layout (default llama)
  std::optional<long long> layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
  std::optional<bool> tied_embeddings;  ///< --tied-embeddings yes|no
  std::string hf_config;                ///< --hf-config (with kSafetensors: the shape's config.json)
  std::optional<TransformerLayout> hf_layout;  ///< --hf-layout
  std::string safetensors;              ///< --safetensors
  // The plan and the training.
  std::string config;                   ///< --config: a DeepSpeed config, applied before the flags
  /// --deepspeed-version: whose rules validate --config (configs/deepspeed_version.hpp).
  configs::DeepSpeedVersion deepspeed_version = configs::DeepSpeedVersion::k0_19_7;
  std::optional<int> stage;             ///< --stage
  std::optional<OffloadDevice> offload_optimizer, offload_param;
  std::optional<Precision> precision;
  bool low_precision_master = false;            ///< --low-precision-master
  bool low_precision_optimizer_states = false;  ///< --low-precision-optimizer-states
  std::optional<std::string> optimizer;
  std::optional<long long> micro_batch, seq_len, grad_accum;
  std::optional<ActivationCheckpointing> checkpointing;
  bool flash_attention = false;         ///< --flash-attention: fused attention (the default; kept for old scripts)
  std::optional<AttentionKernel> attention;  ///< --attention fused|materialized
  bool dropout = false;                 ///< --dropout: count dropout masks
  // The cluster.
  std::optional<int> gpus_per_node, nodes;
  std::string gpu;                       ///< --gpu: a catalog name
  std::optional<double> gpu_memory_bytes;  ///< --gpu-mem
  std::optional<double> cpu_memory_bytes;  ///< --cpu-mem
  std::optional<double> margin;            ///< --margin, a fraction
  std::optional<double> bandwidth;         ///< --bandwidth, bytes/s
  std::optional<double> inter_node_bandwidth;  ///< --inter-node-bandwidth, bytes/s
  // Buckets (elements) and DeepSpeed's own tables.
  std::optional<double> reduce_bucket_size, allgather_bucket_size, prefetch_bucket_size, max_live_parameters;
  std::optional<double> buffer_factor;  ///< --buffer-factor
  std::optional<ByteUnit> units;        ///< --units
};

/// The options the request describes: GPUs and nodes, then the DeepSpeed config, then every other
/// flag over it, as the CLI applies them. The config's notes are appended to `config_notes`.
/// Throws EstimatorError naming the flag for a bad value or combination.
EstimateOptions estimate_request_options(const EstimateRequest& request, std::vector<std::string>* config_notes = nullptr);

/// The model the request names; throws EstimatorError naming the flag or file at fault.
ModelDescription describe_requested_model(const EstimateRequest& request);

/// The whole estimate of `request` (the config's notes among the model's notes): what
/// `shardscope estimate` prints for the same flags.
Estimate estimate_request(const EstimateRequest& request);

/// The flags after `shardscope estimate` that make the same request (only those that are set).
std::vector<std::string> estimate_request_arguments(const EstimateRequest& request);

/// The exit code `shardscope estimate` gives this estimate: 1 when GPU memory was given and nothing
/// fits or the requested plan does not, else 0.
bool estimate_failed(const Estimate& estimate);

}  // namespace shardscope::estimator
