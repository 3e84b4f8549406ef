#include "estimator/config_adapter.hpp"

#include "configs/config_validator.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

OffloadDevice to_device(configs::OffloadDevice device) {
  switch (device) {
    case configs::OffloadDevice::kCpu: return OffloadDevice::kCpu;
    case configs::OffloadDevice::kNvme: return OffloadDevice::kNvme;
    case configs::OffloadDevice::kNone: break;
  }
  return OffloadDevice::kNone;
}

Precision to_precision(configs::PrecisionMode mode) {
  switch (mode) {
    case configs::PrecisionMode::kFp16: return Precision::kFp16;
    case configs::PrecisionMode::kBf16: return Precision::kBf16;
    case configs::PrecisionMode::kFp32: break;
  }
  return Precision::kFp32;
}

// Optimizer states per parameter of DeepSpeed's optimizer families.
void apply_optimizer(const configs::OptimizerConfig& optimizer, PrecisionSettings& p, std::vector<std::string>& notes) {
  using K = configs::OptimizerKind;
  if (!optimizer.present) {
    notes.push_back("the config has no optimizer block (the client builds it); assuming " + p.optimizer + " with " +
                    std::to_string(p.optimizer_states_per_param) + " states per parameter");
    return;
  }
  p.optimizer = optimizer.type;
  switch (optimizer.kind) {
    case K::kAdam: case K::kAdamW: case K::kLamb: case K::kMuAdam: case K::kMuAdamW:
      p.optimizer_states_per_param = 2;
      return;
    case K::kLion: case K::kAdagrad: case K::kMuon: case K::kMuSgd:
      p.optimizer_states_per_param = 1;
      return;
    case K::kTorch: case K::kNone:
      break;
  }
  try {
    p.optimizer_states_per_param = optimizer_states_per_param(optimizer.type, "optimizer.type");
  } catch (const EstimatorError&) {
    notes.push_back("optimizer '" + optimizer.type + "' is not known to the estimator; assuming 2 states per parameter (Adam-like)");
    p.optimizer_states_per_param = 2;
  }
}

void apply_zero(const configs::ZeroConfig& z, EstimateOptions& o, std::vector<std::string>& notes) {
  ZeroPlan plan;
  plan.stage = z.stage;
  plan.offload_optimizer = to_device(z.offload_optimizer.device);
  plan.offload_param = to_device(z.offload_param.device);
  if (plan.stage < 3 && plan.offload_param != OffloadDevice::kNone) {
    notes.push_back("zero_optimization.offload_param is ignored below stage 3 (as DeepSpeed does)");
    plan.offload_param = OffloadDevice::kNone;
  }
  if (plan.stage == 0 && plan.offload_optimizer != OffloadDevice::kNone) {
    notes.push_back("zero_optimization.offload_optimizer has no effect at stage 0");
    plan.offload_optimizer = OffloadDevice::kNone;
  }
  if (plan.stage == 3 && plan.offload_optimizer != OffloadDevice::kNone && z.offload_optimizer.ratio < 1.0)
    notes.push_back("offload_optimizer.ratio < 1 (partial offload) is estimated as full offload");
  o.requested_plan = plan;
  ZeroBuckets& b = o.buckets;
  b.reduce_bucket_size = static_cast<double>(z.reduce_bucket_size);
  b.allgather_bucket_size = static_cast<double>(z.allgather_bucket_size);
  b.prefetch_bucket_size = static_cast<double>(z.prefetch_bucket_size);
  b.max_live_parameters = static_cast<double>(z.max_live_parameters);
  b.max_reuse_distance = static_cast<double>(z.max_reuse_distance);
  b.param_persistence_threshold = static_cast<double>(z.param_persistence_threshold);
  b.overlap_comm = z.overlap_comm;
  b.offload_param_buffer_count = z.offload_param.buffer_count;
  b.offload_param_buffer_size = static_cast<double>(z.offload_param.buffer_size);
  b.offload_optimizer_buffer_count = z.offload_optimizer.buffer_count;
  b.sub_group_size = static_cast<double>(z.sub_group_size);
  b.offload_optimizer_pin_memory = z.offload_optimizer.pin_memory;
  b.offload_param_pin_memory = z.offload_param.pin_memory;
  b.offload_param_max_in_cpu = static_cast<double>(z.offload_param.max_in_cpu);
}

}  // namespace

std::vector<std::string> apply_resolved_config(const configs::ResolvedConfig& config, EstimateOptions& options) {
  std::vector<std::string> notes;
  PrecisionSettings& p = options.precision;
  p.precision = to_precision(config.precision());
  p.low_precision_master = config.bf16.bf16_master_weights_and_grads || config.fp16.fp16_master_weights_and_grads;
  p.low_precision_optimizer_states = config.bf16.bf16_optimizer_states;
  apply_optimizer(config.optimizer, p, notes);
  apply_zero(config.zero, options, notes);
  if (config.batch.train_micro_batch_size_per_gpu > 0)
    options.workload.micro_batch = config.batch.train_micro_batch_size_per_gpu;
  if (config.batch.gradient_accumulation_steps > 0)
    options.workload.grad_accum = config.batch.gradient_accumulation_steps;
  // The engine recomputes every block when the config has an activation_checkpointing block;
  // DeepSpeed's block configures deepspeed.checkpointing for models that call it per layer.
  if (config.activation_checkpointing.requested) {
    options.workload.checkpointing = ActivationCheckpointing::kFull;
    notes.push_back("activation_checkpointing block: counted as full checkpointing (every layer recomputed in "
                    "backward, as the engine and deepspeed.checkpointing per layer do)");
  }
  options.workload.cpu_checkpointing = config.activation_checkpointing.cpu_checkpointing;
  return notes;
}

std::vector<std::string> apply_config_file(const std::string& path, EstimateOptions& options,
                                           configs::DeepSpeedVersion version) {
  configs::ConfigDocument document;
  try {
    document = configs::parse_config_file(path);
  } catch (const configs::ConfigFileError& e) {
    throw EstimatorError(e.what());
  }
  configs::ValidateOptions validate_options;
  validate_options.own_optimizer = true;  // a plan to estimate: the script may pass its own optimizer
  validate_options.world_size = options.cluster.total_gpus();
  validate_options.deepspeed_version = version;
  const configs::ValidationResult result = configs::validate(document, validate_options);
  if (result.has_errors() || !result.config) {
    std::string message = path + ": DeepSpeed " + configs::to_string(version) +
                          " would reject this config, so there is nothing to estimate:\n";
    for (const auto& d : result.diagnostics)
      if (d.severity == configs::Severity::kError) message += configs::format_diagnostic_text(path, d);
    throw EstimatorError(message + "(run 'shardscope validate " + path + " --deepspeed-version " +
                         configs::to_string(version) + "' for every finding)");
  }
  return apply_resolved_config(*result.config, options);
}

}  // namespace shardscope::estimator
