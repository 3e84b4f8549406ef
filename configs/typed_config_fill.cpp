// Fills the typed ResolvedConfig from the resolved JSON. Values that are still "auto" (unfilled)
// or invalid keep the struct's defaults, which are DeepSpeed's defaults too.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

/// Whether a JSON number can become a T: a float read into an integer field must be finite and
/// inside T's range (1e999 parses as inf; converting it is undefined behaviour). The validator
/// reports such a value; the typed config keeps its default.
template <typename T>
bool number_fits(const nlohmann::json& value) {
  if constexpr (std::is_integral_v<T>) {
    if (value.is_number_float()) {
      const double v = value.get<double>();
      return std::isfinite(v) && v >= static_cast<double>(std::numeric_limits<T>::min()) &&
             v < static_cast<double>(std::numeric_limits<T>::max());
    }
    if (value.is_number_unsigned()) return value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    return value.get<std::int64_t>() >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
           value.get<std::int64_t>() <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
  }
  return true;
}

/// The member, or null when absent (const json's operator[] must not see a missing key).
const nlohmann::json& sub(const nlohmann::json& block, const char* key) {
  static const nlohmann::json kNull;
  if (!block.is_object()) return kNull;
  const auto it = block.find(key);
  return it == block.end() ? kNull : *it;
}

template <typename T>
void read(const nlohmann::json& block, const char* key, T& out) {
  if (!block.is_object() || !block.contains(key)) return;
  const auto& value = block[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (value.is_boolean()) out = value.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (value.is_string()) out = value.get<std::string>();
  } else {
    if (value.is_number() && number_fits<T>(value)) out = value.get<T>();
  }
}

template <typename T>
void read(const nlohmann::json& block, const char* key, std::optional<T>& out) {
  if (!block.is_object() || !block.contains(key) || block[key].is_null()) return;
  T value{};
  read(block, key, value);
  const auto& raw = block[key];
  if ((std::is_same_v<T, std::string> && raw.is_string()) || (std::is_same_v<T, bool> && raw.is_boolean()) ||
      (!std::is_same_v<T, std::string> && !std::is_same_v<T, bool> && raw.is_number() && number_fits<T>(raw)))
    out = value;
}

void read_strings(const nlohmann::json& block, const char* key, std::vector<std::string>& out) {
  if (!block.is_object() || !block.contains(key) || !block[key].is_array()) return;
  for (const auto& item : block[key])
    if (item.is_string()) out.push_back(item.get<std::string>());
}

OffloadDevice device_of(const nlohmann::json& block) {
  const auto& value = sub(block, "device");
  const std::string device = value.is_string() ? value.get<std::string>() : "none";
  if (device == "cpu") return OffloadDevice::kCpu;
  if (device == "nvme") return OffloadDevice::kNvme;
  return OffloadDevice::kNone;
}

void fill_offload(const nlohmann::json& zero, ZeroConfig& out) {
  const auto& param = sub(zero, "offload_param");
  out.offload_param.device = device_of(param);
  read(param, "nvme_path", out.offload_param.nvme_path);
  read(param, "buffer_count", out.offload_param.buffer_count);
  read(param, "buffer_size", out.offload_param.buffer_size);
  read(param, "max_in_cpu", out.offload_param.max_in_cpu);
  read(param, "pin_memory", out.offload_param.pin_memory);
  const auto& opt = sub(zero, "offload_optimizer");
  out.offload_optimizer.device = device_of(opt);
  read(opt, "nvme_path", out.offload_optimizer.nvme_path);
  read(opt, "buffer_count", out.offload_optimizer.buffer_count);
  read(opt, "pin_memory", out.offload_optimizer.pin_memory);
  read(opt, "pipeline_read", out.offload_optimizer.pipeline_read);
  read(opt, "pipeline_write", out.offload_optimizer.pipeline_write);
  read(opt, "fast_init", out.offload_optimizer.fast_init);
  read(opt, "ratio", out.offload_optimizer.ratio);
  read(opt, "super_offload", out.offload_optimizer.super_offload);
  read(opt, "cpuadam_cores_perc", out.offload_optimizer.cpuadam_cores_perc);
}

void fill_zero(const nlohmann::json& zero, ZeroConfig& out) {
  read(zero, "stage", out.stage);
  read(zero, "contiguous_gradients", out.contiguous_gradients);
  read(zero, "reduce_scatter", out.reduce_scatter);
  read(zero, "reduce_bucket_size", out.reduce_bucket_size);
  read(zero, "use_multi_rank_bucket_allreduce", out.use_multi_rank_bucket_allreduce);
  read(zero, "allgather_partitions", out.allgather_partitions);
  read(zero, "allgather_bucket_size", out.allgather_bucket_size);
  read(zero, "overlap_comm", out.overlap_comm);
  read(zero, "load_from_fp32_weights", out.load_from_fp32_weights);
  read(zero, "elastic_checkpoint", out.elastic_checkpoint);
  read(zero, "sub_group_size", out.sub_group_size);
  read(zero, "stage3_prefetch_bucket_size", out.prefetch_bucket_size);
  read(zero, "stage3_param_persistence_threshold", out.param_persistence_threshold);
  read(zero, "stage3_model_persistence_threshold", out.model_persistence_threshold);
  read(zero, "stage3_max_live_parameters", out.max_live_parameters);
  read(zero, "stage3_max_reuse_distance", out.max_reuse_distance);
  read(zero, "stage3_gather_16bit_weights_on_model_save", out.gather_16bit_weights_on_model_save);
  read(zero, "stage3_module_granularity_threshold", out.module_granularity_threshold);
  read(zero, "stage3_use_all_reduce_for_fetch_params", out.use_all_reduce_for_fetch_params);
  read(zero, "stage3_allgather_sequential", out.allgather_sequential);
  if (out.allgather_sequential) out.prefetch_bucket_size = 1;  // what the engine then does
  read(zero, "ignore_unused_parameters", out.ignore_unused_parameters);
  read(zero, "round_robin_gradients", out.round_robin_gradients);
  read(zero, "zero_hpz_partition_size", out.zero_hpz_partition_size);
  read(zero, "zero_quantized_weights", out.zero_quantized_weights);
  read(zero, "zero_quantized_nontrainable_weights", out.zero_quantized_nontrainable_weights);
  read(zero, "zero_quantized_gradients", out.zero_quantized_gradients);
  read(zero, "memory_efficient_linear", out.memory_efficient_linear);
  read(zero, "pipeline_loading_checkpoint", out.pipeline_loading_checkpoint);
  read(zero, "override_module_apply", out.override_module_apply);
  read(zero, "log_trace_cache_warnings", out.log_trace_cache_warnings);
  read(zero, "enable_sanity_checks", out.enable_sanity_checks);
  read(zero, "save_muon_momentum_buffer_in_memory", out.save_muon_momentum_buffer_in_memory);
  fill_offload(zero, out);
}

void fill_precision(const nlohmann::json& e, ResolvedConfig& c) {
  const auto& fp16 = sub(e, "fp16");
  read(fp16, "enabled", c.fp16.enabled);
  read(fp16, "auto_cast", c.fp16.auto_cast);
  read(fp16, "loss_scale", c.fp16.loss_scale);
  read(fp16, "initial_scale_power", c.fp16.initial_scale_power);
  read(fp16, "loss_scale_window", c.fp16.loss_scale_window);
  read(fp16, "hysteresis", c.fp16.hysteresis);
  read(fp16, "consecutive_hysteresis", c.fp16.consecutive_hysteresis);
  read(fp16, "min_loss_scale", c.fp16.min_loss_scale);
  read(fp16, "fp16_master_weights_and_grads", c.fp16.fp16_master_weights_and_grads);
  const auto& bf16 = sub(e, "bf16");
  read(bf16, "enabled", c.bf16.enabled);
  read(bf16, "immediate_grad_update", c.bf16.immediate_grad_update);
  read(bf16, "check_grad_overflow", c.bf16.check_grad_overflow);
  read(bf16, "bf16_master_weights_and_grads", c.bf16.bf16_master_weights_and_grads);
  read(bf16, "bf16_optimizer_states", c.bf16.bf16_optimizer_states);
  const auto& autocast = sub(e, "torch_autocast");
  read(autocast, "enabled", c.torch_autocast.enabled);
  read(autocast, "dtype", c.torch_autocast.dtype);
  read_strings(autocast, "lower_precision_safe_modules", c.torch_autocast.lower_precision_safe_modules);
}

void fill_optimizer(const nlohmann::json& e, ResolvedConfig& c) {
  const auto& optimizer = sub(e, "optimizer");
  read(optimizer, "legacy_fusion", c.optimizer.legacy_fusion);
  const auto& params = sub(optimizer, "params");
  if (!params.is_object()) return;
  c.optimizer.params_json = params.dump();
  read(params, "lr", c.optimizer.lr);
  if (params.contains("betas") && sub(params, "betas").is_array() && sub(params, "betas").size() == 2 &&
      sub(params, "betas")[0].is_number() && sub(params, "betas")[1].is_number()) {
    c.optimizer.beta1 = sub(params, "betas")[0].get<double>();
    c.optimizer.beta2 = sub(params, "betas")[1].get<double>();
  }
  read(params, "eps", c.optimizer.eps);
  read(params, "weight_decay", c.optimizer.weight_decay);
  read(params, "bias_correction", c.optimizer.bias_correction);
  read(params, "adam_w_mode", c.optimizer.adam_w_mode);
  read(params, "torch_adam", c.optimizer.torch_adam);
  read(params, "fp32_optimizer_states", c.optimizer.fp32_optimizer_states);
  // DeepSpeedCPUAdam: bf16_optimizer_states forces fp32_optimizer_states off (engine.py).
  if (c.bf16.bf16_optimizer_states) c.optimizer.fp32_optimizer_states = false;
}

void fill_scheduler(const nlohmann::json& e, SchedulerConfig& s) {
  const auto& p = sub(sub(e, "scheduler"), "params");
  if (!p.is_object()) return;
  s.params_json = p.dump();
  read(p, "warmup_min_lr", s.warmup_min_lr);
  read(p, "warmup_max_lr", s.warmup_max_lr);
  read(p, "warmup_num_steps", s.warmup_num_steps);
  read(p, "warmup_type", s.warmup_type);
  read(p, "total_num_steps", s.total_num_steps);
  read(p, "warmup_min_ratio", s.warmup_min_ratio);
  read(p, "cos_min_ratio", s.cos_min_ratio);
  read(p, "lr_range_test_min_lr", s.lr_range_test_min_lr);
  read(p, "lr_range_test_step_size", s.lr_range_test_step_size);
  read(p, "lr_range_test_step_rate", s.lr_range_test_step_rate);
  read(p, "lr_range_test_staircase", s.lr_range_test_staircase);
  read(p, "cycle_min_lr", s.cycle_min_lr);
  read(p, "cycle_max_lr", s.cycle_max_lr);
  read(p, "decay_lr_rate", s.decay_lr_rate);
  read(p, "cycle_first_step_size", s.cycle_first_step_size);
  read(p, "cycle_second_step_size", s.cycle_second_step_size);
  read(p, "cycle_first_stair_count", s.cycle_first_stair_count);
  read(p, "cycle_second_stair_count", s.cycle_second_stair_count);
  read(p, "decay_step_size", s.decay_step_size);
  read(p, "cycle_momentum", s.cycle_momentum);
  read(p, "cycle_min_mom", s.cycle_min_mom);
  read(p, "cycle_max_mom", s.cycle_max_mom);
  read(p, "decay_mom_rate", s.decay_mom_rate);
}

void fill_monitors_and_tools(const ValidationContext& context, const nlohmann::json& e, ResolvedConfig& c) {
  const auto& ac = sub(e, "activation_checkpointing");
  for (const auto& v : context.resolved)  // a key the user wrote, not a default the schema filled in
    c.activation_checkpointing.requested |= v.path.rfind("activation_checkpointing.", 0) == 0 &&
                                            (v.source == ValueSource::kUser || v.source == ValueSource::kOverride);
  read(ac, "partition_activations", c.activation_checkpointing.partition_activations);
  read(ac, "number_checkpoints", c.activation_checkpointing.number_checkpoints);
  read(ac, "contiguous_memory_optimization", c.activation_checkpointing.contiguous_memory_optimization);
  read(ac, "synchronize_checkpoint_boundary", c.activation_checkpointing.synchronize_checkpoint_boundary);
  read(ac, "profile", c.activation_checkpointing.profile);
  read(ac, "cpu_checkpointing", c.activation_checkpointing.cpu_checkpointing);
  const auto& aio = sub(e, "aio");
  read(aio, "block_size", c.aio.block_size);
  read(aio, "queue_depth", c.aio.queue_depth);
  read(aio, "intra_op_parallelism", c.aio.intra_op_parallelism);
  read(aio, "single_submit", c.aio.single_submit);
  read(aio, "overlap_events", c.aio.overlap_events);
  read(aio, "use_gds", c.aio.use_gds);
  const auto& fp = sub(e, "flops_profiler");
  read(fp, "enabled", c.flops_profiler.enabled);
  read(fp, "recompute_fwd_factor", c.flops_profiler.recompute_fwd_factor);
  read(fp, "profile_step", c.flops_profiler.profile_step);
  read(fp, "module_depth", c.flops_profiler.module_depth);
  read(fp, "top_modules", c.flops_profiler.top_modules);
  read(fp, "detailed", c.flops_profiler.detailed);
  read(fp, "output_file", c.flops_profiler.output_file);
  const auto& cl = sub(e, "comms_logger");
  c.comms_logger.block_present = context.written("comms_logger");
  c.comms_logger.effective_enabled = c.comms_logger.block_present;
  if (const ConfigNode* enabled = context.node_at("comms_logger.enabled"))
    c.comms_logger.enabled_as_written = enabled->kind == ConfigNode::Kind::kBool && enabled->bool_value;
  read(cl, "verbose", c.comms_logger.verbose);
  read(cl, "prof_all", c.comms_logger.prof_all);
  read(cl, "debug", c.comms_logger.debug);
  read_strings(cl, "prof_ops", c.comms_logger.prof_ops);
  auto& m = c.monitors;
  read(sub(e, "tensorboard"), "enabled", m.tensorboard.enabled);
  read(sub(e, "tensorboard"), "output_path", m.tensorboard.output_path);
  read(sub(e, "tensorboard"), "job_name", m.tensorboard.job_name);
  read(sub(e, "wandb"), "enabled", m.wandb.enabled);
  read(sub(e, "wandb"), "group", m.wandb.group);
  read(sub(e, "wandb"), "team", m.wandb.team);
  read(sub(e, "wandb"), "project", m.wandb.project);
  read(sub(e, "csv_monitor"), "enabled", m.csv_monitor.enabled);
  read(sub(e, "csv_monitor"), "output_path", m.csv_monitor.output_path);
  read(sub(e, "csv_monitor"), "job_name", m.csv_monitor.job_name);
  const auto& comet = sub(e, "comet");
  read(comet, "enabled", m.comet.enabled);
  read(comet, "samples_log_interval", m.comet.samples_log_interval);
  read(comet, "project", m.comet.project);
  read(comet, "workspace", m.comet.workspace);
  read(comet, "experiment_name", m.comet.experiment_name);
  read(comet, "experiment_key", m.comet.experiment_key);
  read(comet, "online", m.comet.online);
  read(comet, "mode", m.comet.mode);
}

void fill_top_level(const ValidationContext& context, const nlohmann::json& e, ResolvedConfig& c) {
  read(e, "gradient_clipping", c.gradient_clipping);
  read(e, "prescale_gradients", c.prescale_gradients);
  read(e, "gradient_predivide_factor", c.gradient_predivide_factor);
  read(e, "gradient_allreduce_op", c.gradient_allreduce_op);
  read(e, "communication_data_type", c.communication_data_type);
  read(e, "seq_parallel_communication_data_type", c.seq_parallel_communication_data_type);
  read(e, "sparse_gradients", c.sparse_gradients);
  read(e, "disable_allgather", c.disable_allgather);
  read(e, "dump_state", c.dump_state);
  read(e, "wall_clock_breakdown", c.wall_clock_breakdown);
  read(e, "memory_breakdown", c.memory_breakdown);
  read(e, "zero_allow_untested_optimizer", c.zero_allow_untested_optimizer);
  read(e, "zero_force_ds_cpu_optimizer", c.zero_force_ds_cpu_optimizer);
  read(e, "managed_gradient_accumulation", c.managed_gradient_accumulation);
  read(e, "dataloader_drop_last", c.dataloader_drop_last);
  read(e, "steps_per_print", c.steps_per_print);
  read(e, "vocabulary_size", c.vocabulary_size);
  read(e, "log_level", c.log_level);
  const auto& ck = sub(e, "checkpoint");
  read(ck, "tag_validation", c.checkpoint.tag_validation);
  read(ck, "load_universal", c.checkpoint.load_universal);
  read(ck, "use_node_local_storage", c.checkpoint.use_node_local_storage);
  read(ck, "checkpoint_serialization", c.checkpoint.checkpoint_serialization);
  read(sub(ck, "parallel_write"), "pipeline_stage", c.checkpoint.parallel_write_pipeline_stage);
  read(sub(e, "data_types"), "grad_accum_dtype", c.data_types.grad_accum_dtype);
  read(sub(e, "data_types"), "param_dtype", c.data_types.param_dtype);
  read(sub(e, "data_types"), "buffer_dtype", c.data_types.buffer_dtype);
  if (const ConfigNode* amp = context.node_at("amp"); amp && amp->is_object()) {
    nlohmann::json params = node_to_json(*amp);
    c.amp.enabled = params.value("enabled", false) == true;
    params.erase("enabled");
    c.amp.params_json = params.dump();
  }
}

}  // namespace

void fill_typed_config(ValidationContext& context) {
  const nlohmann::json& e = context.effective;
  ResolvedConfig& c = context.config;  // batch, optimizer/scheduler kind were set by their passes
  fill_top_level(context, e, c);
  fill_precision(e, c);
  fill_zero(sub(e, "zero_optimization"), c.zero);
  fill_optimizer(e, c);
  fill_scheduler(e, c.scheduler);
  fill_monitors_and_tools(context, e, c);
}

}  // namespace shardscope::configs
