#pragma once
// Everything an estimate depends on besides the model: precision, the ZeRO plan and its buckets,
// the cluster and the workload. Filled from CLI flags, or from a DeepSpeed config through
// config_adapter.hpp; the defaults are DeepSpeed 0.19.7's code defaults.

#include <optional>
#include <string>

#include "estimator/byte_units.hpp"

namespace shardscope::estimator {

enum class Precision { kFp32, kFp16, kBf16 };
enum class OffloadDevice { kNone, kCpu, kNvme };
enum class ActivationCheckpointing { kNone, kSelective, kFull };
/// How attention keeps what its backward needs. kFused: scaled_dot_product_attention's flash or
/// memory-efficient kernels (the engine's, and current Hugging Face models' default), which keep
/// the output and a fp32 log-sum-exp per row; kMaterialized: the s x s scores kept (eager attention).
enum class AttentionKernel { kFused, kMaterialized };

/// One ZeRO stage with its offload choices: a row of the estimate table.
struct ZeroPlan {
  int stage = 0;
  OffloadDevice offload_optimizer = OffloadDevice::kNone;
  OffloadDevice offload_param = OffloadDevice::kNone;
  bool operator==(const ZeroPlan& o) const {
    return stage == o.stage && offload_optimizer == o.offload_optimizer && offload_param == o.offload_param;
  }
};

struct PrecisionSettings {
  Precision precision = Precision::kBf16;
  /// bf16_master_weights_and_grads / fp16_master_weights_and_grads: 16-bit master copy.
  bool low_precision_master = false;
  /// bf16_optimizer_states: Adam moments kept in bf16.
  bool low_precision_optimizer_states = false;
  std::string optimizer = "adamw";
  int optimizer_states_per_param = 2;  ///< Adam/AdamW/Lamb: momentum + variance
};

/// zero_optimization sizes, in elements as DeepSpeed counts them (not bytes).
struct ZeroBuckets {
  double reduce_bucket_size = 5e8;
  double allgather_bucket_size = 5e8;
  double prefetch_bucket_size = 5e7;
  double max_live_parameters = 1e9;
  double max_reuse_distance = 1e9;
  double param_persistence_threshold = 1e5;
  std::optional<bool> overlap_comm;  ///< unset = DeepSpeed's default, stage == 3
  double offload_param_buffer_count = 5;
  double offload_param_buffer_size = 1e8;
  double offload_optimizer_buffer_count = 4;
  double sub_group_size = 1e9;
  bool offload_optimizer_pin_memory = true;  ///< offload_optimizer.pin_memory (true since 0.19.5)
  bool offload_param_pin_memory = true;      ///< offload_param.pin_memory
  double offload_param_max_in_cpu = 1e9;     ///< offload_param.max_in_cpu: elements kept in host memory with NVMe
};

struct ClusterSettings {
  int gpus_per_node = 1;
  int nodes = 1;
  std::optional<double> gpu_memory_bytes;  ///< per GPU
  std::string gpu_name;                    ///< catalog name when the memory came from it
  std::optional<double> cpu_memory_bytes;  ///< host RAM per node
  double margin = 0.10;                    ///< fraction of memory kept free
  std::optional<double> intra_node_bandwidth;  ///< bytes/s per GPU, unidirectional
  std::optional<double> inter_node_bandwidth;  ///< bytes/s per GPU across nodes
  int total_gpus() const { return gpus_per_node * nodes; }
};

struct WorkloadSettings {
  long long micro_batch = 1;
  long long seq_len = 0;  ///< 0 = the model's sequence length
  long long grad_accum = 1;
  ActivationCheckpointing checkpointing = ActivationCheckpointing::kNone;
  AttentionKernel attention = AttentionKernel::kFused;
  bool dropout = false;            ///< count dropout masks (the engine trains without dropout)
  bool cpu_checkpointing = false;  ///< activation_checkpointing.cpu_checkpointing
};

struct EstimateOptions {
  PrecisionSettings precision;
  ZeroBuckets buckets;
  ClusterSettings cluster;
  WorkloadSettings workload;
  std::optional<ZeroPlan> requested_plan;  ///< from --stage/--offload-* or a config
  double deepspeed_buffer_factor = 1.5;    ///< estimate_zero*'s additional_buffer_factor
  ByteUnit display_unit = ByteUnit::kGiB;  ///< for the verdict's sentences and the text report
};

/// "fp32", "fp16" or "bf16".
const char* precision_name(Precision precision);
/// "none", "cpu" or "nvme".
const char* offload_name(OffloadDevice device);
/// "none", "selective" or "full".
const char* checkpointing_name(ActivationCheckpointing checkpointing);
/// "fused" or "materialized".
const char* attention_name(AttentionKernel attention);
/// Parses "fused", "materialized"; throws EstimatorError naming `what`.
AttentionKernel parse_attention(const std::string& text, const std::string& what);
/// "stage 3, offload_optimizer=cpu, offload_param=none".
std::string plan_name(const ZeroPlan& plan);

/// Parses "none", "cpu", "nvme"; throws EstimatorError naming `what`.
OffloadDevice parse_offload(const std::string& text, const std::string& what);
/// Parses "fp32", "fp16", "bf16"; throws EstimatorError naming `what`.
Precision parse_precision(const std::string& text, const std::string& what);
/// Parses "none", "selective", "full"; throws EstimatorError naming `what`.
ActivationCheckpointing parse_checkpointing(const std::string& text, const std::string& what);
/// Optimizer states per parameter: adam/adamw/lamb 2, sgd (momentum)/adagrad 1; throws if unknown.
int optimizer_states_per_param(const std::string& optimizer, const std::string& what);

/// Throws EstimatorError when a plan is not one DeepSpeed runs (offload_param below stage 3,
/// NVMe below stage 3, optimizer offload at stage 0, stage outside 0-3).
void validate_plan(const ZeroPlan& plan);

}  // namespace shardscope::estimator
