#pragma once
// The typed, resolved DeepSpeed 0.19.7 config: every value is the effective one DeepSpeed would
// run with (code defaults filled in, "auto" handled, batch keys solved, overlap_comm resolved by
// stage). Produced by validate() in configs/config_validator.hpp; read by the estimator, the
// engine and the GUI. Light on purpose: no JSON library in this header. Blocks whose parameters
// are open-ended (optimizer and scheduler params, amp) also carry their params as JSON text so a
// consumer can read keys this struct does not name.
//
// Bucket, prefetch and threshold sizes are ELEMENT COUNTS, not bytes (as in DeepSpeed).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::configs {

enum class OffloadDevice { kNone, kCpu, kNvme };

/// The one precision mode a run trains in (fp16 and bf16 together are a validation error).
enum class PrecisionMode { kFp32, kFp16, kBf16 };

/// Optimizer families DeepSpeed builds itself; kTorch = any other torch.optim class by name.
enum class OptimizerKind { kNone, kAdam, kAdamW, kLamb, kLion, kAdagrad, kMuon, kMuAdam, kMuAdamW, kMuSgd, kTorch };

/// DeepSpeed's own schedulers; kTorch = a torch.optim.lr_scheduler class by name.
enum class SchedulerKind { kNone, kLRRangeTest, kOneCycle, kWarmupLR, kWarmupDecayLR, kWarmupCosineLR, kTorch };

/// The three batch keys after DeepSpeed's solver (_set_batch_related_parameters).
struct BatchConfig {
  std::int64_t train_batch_size = 0;             ///< 0 = could not be resolved (see diagnostics)
  std::int64_t train_micro_batch_size_per_gpu = 0;
  std::int64_t gradient_accumulation_steps = 0;
  int world_size = 1;                            ///< data-parallel world size used to solve
  bool world_size_inferred = false;              ///< true when taken from tb / (mb * gas)
  bool resolved = false;                         ///< all three known and consistent
};

struct OptimizerConfig {
  bool present = false;
  std::string type;                   ///< as written, e.g. "AdamW"
  OptimizerKind kind = OptimizerKind::kNone;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool bias_correction = true;
  bool adam_w_mode = true;            ///< "Adam" runs AdamW unless adam_w_mode is false
  bool torch_adam = false;
  bool fp32_optimizer_states = true;  ///< DeepSpeedCPUAdam; forced false by bf16_optimizer_states
  bool legacy_fusion = false;
  std::string params_json = "{}";     ///< params with defaults filled in, as JSON text
};

struct SchedulerConfig {
  bool present = false;
  std::string type;
  SchedulerKind kind = SchedulerKind::kNone;
  std::string params_json = "{}";     ///< params with defaults filled in, as JSON text
  // WarmupLR / WarmupDecayLR / WarmupCosineLR
  double warmup_min_lr = 0.0;
  std::optional<double> warmup_max_lr;  ///< WarmupLR: unset = optimizer lr; WarmupDecayLR: 0.001
  std::int64_t warmup_num_steps = 1000;
  std::string warmup_type = "log";
  std::optional<std::int64_t> total_num_steps;
  double warmup_min_ratio = 0.0;
  double cos_min_ratio = 0.0001;
  // LRRangeTest
  double lr_range_test_min_lr = 1e-3;
  std::int64_t lr_range_test_step_size = 2000;
  double lr_range_test_step_rate = 1.0;
  bool lr_range_test_staircase = false;
  // OneCycle
  std::optional<double> cycle_min_lr;
  std::optional<double> cycle_max_lr;
  double decay_lr_rate = 0.0;
  std::int64_t cycle_first_step_size = 2000;
  std::optional<std::int64_t> cycle_second_step_size;
  std::int64_t cycle_first_stair_count = 0;
  std::optional<std::int64_t> cycle_second_stair_count;
  std::int64_t decay_step_size = 0;
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0.0;
};

struct Fp16Config {
  bool enabled = false;
  bool auto_cast = false;
  double loss_scale = 0.0;           ///< 0 = dynamic loss scaling
  int initial_scale_power = 16;      ///< initial scale 2^16
  std::int64_t loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
  bool fp16_master_weights_and_grads = false;
};

struct Bf16Config {
  bool enabled = false;
  bool immediate_grad_update = false;
  bool check_grad_overflow = true;   ///< default flipped to true in 0.19.3
  bool bf16_master_weights_and_grads = false;
  bool bf16_optimizer_states = false;
};

struct TorchAutocastConfig {
  bool enabled = false;
  std::optional<std::string> dtype;
  std::vector<std::string> lower_precision_safe_modules;
};

struct AmpConfig {
  bool enabled = false;
  std::string params_json = "{}";    ///< every other key, passed to apex.amp.initialize
};

struct OffloadParamConfig {
  OffloadDevice device = OffloadDevice::kNone;
  std::optional<std::string> nvme_path;
  int buffer_count = 5;
  std::int64_t buffer_size = 100000000;
  std::int64_t max_in_cpu = 1000000000;
  bool pin_memory = true;            ///< default flipped to true in 0.19.5
};

struct OffloadOptimizerConfig {
  OffloadDevice device = OffloadDevice::kNone;
  std::optional<std::string> nvme_path;
  int buffer_count = 4;
  bool pin_memory = true;
  bool pipeline_read = false;
  bool pipeline_write = false;
  bool fast_init = false;
  double ratio = 1.0;                ///< < 1 = partial offload, stage 3 only
  bool super_offload = false;
  double cpuadam_cores_perc = 0.8;
};

struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  std::int64_t reduce_bucket_size = 500000000;
  bool use_multi_rank_bucket_allreduce = true;
  bool allgather_partitions = true;
  std::int64_t allgather_bucket_size = 500000000;
  bool overlap_comm = false;         ///< resolved: unset means stage == 3
  bool load_from_fp32_weights = true;
  bool elastic_checkpoint = false;
  OffloadParamConfig offload_param;
  OffloadOptimizerConfig offload_optimizer;
  std::int64_t sub_group_size = 1000000000;
  std::int64_t prefetch_bucket_size = 50000000;  ///< code default 5e7 (docs say 5e8)
  std::int64_t param_persistence_threshold = 100000;
  std::int64_t model_persistence_threshold = INT64_MAX;
  std::int64_t max_live_parameters = 1000000000;
  std::int64_t max_reuse_distance = 1000000000;
  bool gather_16bit_weights_on_model_save = false;
  std::int64_t module_granularity_threshold = 0;
  bool use_all_reduce_for_fetch_params = false;
  bool allgather_sequential = false;
  bool ignore_unused_parameters = true;
  bool round_robin_gradients = false;
  int zero_hpz_partition_size = 1;
  bool zero_quantized_weights = false;
  bool zero_quantized_nontrainable_weights = false;
  bool zero_quantized_gradients = false;
  bool memory_efficient_linear = true;
  bool pipeline_loading_checkpoint = false;
  bool override_module_apply = true;
  bool log_trace_cache_warnings = false;
  bool enable_sanity_checks = false;
  bool save_muon_momentum_buffer_in_memory = false;
};

struct ActivationCheckpointingConfig {
  /// The user wrote a key of the block: the built-in models then recompute each block in backward
  /// (the engine's rule), and the estimator counts full checkpointing.
  bool requested = false;
  bool partition_activations = false;
  std::optional<std::int64_t> number_checkpoints;
  bool contiguous_memory_optimization = false;
  bool synchronize_checkpoint_boundary = false;
  bool profile = false;
  bool cpu_checkpointing = false;
};

struct AioConfig {
  std::int64_t block_size = 1048576;
  int queue_depth = 8;
  int intra_op_parallelism = 1;
  bool single_submit = false;
  bool overlap_events = true;
  bool use_gds = false;
};

struct FlopsProfilerConfig {
  bool enabled = false;
  double recompute_fwd_factor = 0.0;
  std::int64_t profile_step = 1;
  int module_depth = -1;
  int top_modules = 1;
  bool detailed = true;
  std::optional<std::string> output_file;
};

struct CommsLoggerConfig {
  bool block_present = false;        ///< DeepSpeed turns logging on when the block exists
  bool enabled_as_written = false;   ///< the block's own "enabled" (does not gate logging)
  bool effective_enabled = false;    ///< what DeepSpeed runs: == block_present
  bool verbose = false;
  bool prof_all = true;
  bool debug = false;
  std::vector<std::string> prof_ops;
};

struct TensorboardConfig {
  bool enabled = false;
  std::string output_path;
  std::string job_name = "DeepSpeedJobName";
};

struct WandbConfig {
  bool enabled = false;
  std::optional<std::string> group;
  std::optional<std::string> team;
  std::string project = "deepspeed";
};

struct CsvMonitorConfig {
  bool enabled = false;
  std::string output_path;
  std::string job_name = "DeepSpeedJobName";
};

struct CometConfig {
  bool enabled = false;
  std::int64_t samples_log_interval = 100;
  std::optional<std::string> project;
  std::optional<std::string> workspace;
  std::optional<std::string> experiment_name;
  std::optional<std::string> experiment_key;
  std::optional<bool> online;
  std::optional<std::string> mode;
};

struct MonitorsConfig {
  TensorboardConfig tensorboard;
  WandbConfig wandb;
  CsvMonitorConfig csv_monitor;
  CometConfig comet;
};

struct CheckpointConfig {
  std::string tag_validation = "Warn";  ///< "Ignore", "Warn" or "Fail" (case-insensitive)
  bool load_universal = false;
  bool use_node_local_storage = false;
  bool parallel_write_pipeline_stage = false;
  bool checkpoint_serialization = true;
};

struct DataTypesConfig {
  std::optional<std::string> grad_accum_dtype;
  std::optional<std::string> param_dtype;
  std::optional<std::string> buffer_dtype;
};

/// The effective config DeepSpeed 0.19.7 would run with.
struct ResolvedConfig {
  BatchConfig batch;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  Fp16Config fp16;
  Bf16Config bf16;
  TorchAutocastConfig torch_autocast;
  AmpConfig amp;
  ZeroConfig zero;
  ActivationCheckpointingConfig activation_checkpointing;
  AioConfig aio;
  FlopsProfilerConfig flops_profiler;
  CommsLoggerConfig comms_logger;
  MonitorsConfig monitors;
  CheckpointConfig checkpoint;
  DataTypesConfig data_types;

  double gradient_clipping = 1.0;    ///< default flipped to 1.0 in 0.19.3; 0 disables
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  std::string gradient_allreduce_op = "mean";
  std::optional<std::string> communication_data_type;
  std::string seq_parallel_communication_data_type = "fp32";
  bool sparse_gradients = false;
  bool disable_allgather = false;
  bool dump_state = false;
  bool wall_clock_breakdown = false;  ///< effective: forced on by flops_profiler.enabled
  bool memory_breakdown = false;
  bool zero_allow_untested_optimizer = false;
  bool zero_force_ds_cpu_optimizer = true;
  bool managed_gradient_accumulation = true;
  bool dataloader_drop_last = false;
  std::optional<std::int64_t> steps_per_print;
  std::optional<std::int64_t> vocabulary_size;
  std::optional<std::string> log_level;

  /// The precision the weights train in (fp16 wins over bf16 only if the config is invalid).
  PrecisionMode precision() const {
    if (fp16.enabled) return PrecisionMode::kFp16;
    if (bf16.enabled) return PrecisionMode::kBf16;
    return PrecisionMode::kFp32;
  }
};

/// "none", "cpu" or "nvme".
const char* to_string(OffloadDevice device);
/// "fp32", "fp16" or "bf16".
const char* to_string(PrecisionMode mode);
/// The kind's canonical DeepSpeed name ("Adam", "AdamW", ...; "torch" for kTorch).
const char* to_string(OptimizerKind kind);
/// The kind's canonical DeepSpeed name ("WarmupLR", ...; "torch" for kTorch).
const char* to_string(SchedulerKind kind);

}  // namespace shardscope::configs
