// DeepSpeed 0.19.7's keys and code defaults (runtime/config.py, runtime/constants.py,
// runtime/precision_config.py, runtime/zero/config.py, runtime/zero/offload_config.py,
// monitor/config.py, comm/config.py, ...). Where the documentation disagrees, the code wins:
// stage3_prefetch_bucket_size is 5e7, overlap_comm is None (resolved to stage == 3 elsewhere),
// train_batch_size and gradient_accumulation_steps have no default.
#include "configs/config_schema.hpp"

#include <algorithm>

#include "configs/did_you_mean.hpp"

namespace shardscope::configs {
namespace {

FieldSpec b(const std::string& name, bool value) {
  return {name, FieldType::kBool, value ? "true" : "false", "", {}, {}, {}, false};
}
FieldSpec i(const std::string& name, const std::string& value, std::optional<double> min = {},
            std::optional<double> max = {}, const std::string& alias = "") {
  return {name, FieldType::kInt, value, alias, min, max, {}, value == "null"};
}
FieldSpec n(const std::string& name, const std::string& value, std::optional<double> min = {},
            std::optional<double> max = {}) {
  return {name, FieldType::kNumber, value, "", min, max, {}, value == "null"};
}
FieldSpec s(const std::string& name, const std::string& value, std::vector<std::string> choices = {}) {
  return {name, FieldType::kString, value, "", {}, {}, std::move(choices), value == "null"};
}
FieldSpec list(const std::string& name, const std::string& value) {
  return {name, FieldType::kStringList, value, "", {}, {}, {}, value == "null"};
}
FieldSpec obj(const std::string& name) {
  return {name, FieldType::kObject, "null", "", {}, {}, {}, true};
}
/// pydantic's gt=: the bound itself is refused.
FieldSpec above(FieldSpec field) {
  field.min_exclusive = true;
  return field;
}
FieldSpec alias(FieldSpec field, const std::string& other) {
  field.alias = other;
  return field;
}

const std::vector<std::string> kPrecisionNames = {"fp16", "bf16", "fp32"};

// 0.19.8 (runtime/config.py): sparse_gradients and graph_harvesting became removed keys (rejected
// before this schema is consulted), disable_python_gc is new (get_disable_python_gc, default False).
void drop_0198_top_level(BlockSpec& block) {
  auto& fields = block.fields;
  fields.erase(std::remove_if(fields.begin(), fields.end(), [](const FieldSpec& f) {
                 return f.name == "sparse_gradients" || f.name == "graph_harvesting";
               }), fields.end());
  fields.push_back(b("disable_python_gc", false));
  block.other_keys.push_back("sparse_gradients");
  block.other_keys.push_back("graph_harvesting");
}

BlockSpec top_level(DeepSpeedVersion version) {
  BlockSpec block{"", false, true, {}, {}};
  block.fields = {
      // Batch keys: positivity is checked by the batch rules with DeepSpeed's own messages.
      i("train_batch_size", "null"), i("train_micro_batch_size_per_gpu", "null"),
      i("gradient_accumulation_steps", "null"), b("managed_gradient_accumulation", true),
      i("steps_per_print", "null", 1), n("gradient_clipping", "1.0", 0),
      b("prescale_gradients", false), n("gradient_predivide_factor", "1.0", 0),
      s("gradient_allreduce_op", "\"mean\"", {"mean", "sum"}),
      s("communication_data_type", "null", kPrecisionNames),
      s("seq_parallel_communication_data_type", "\"fp32\"", kPrecisionNames),
      b("sparse_gradients", false), b("disable_allgather", false), b("dump_state", false),
      b("wall_clock_breakdown", false), b("memory_breakdown", false),
      b("zero_allow_untested_optimizer", false), b("zero_force_ds_cpu_optimizer", true),
      b("graph_harvesting", false), i("vocabulary_size", "null", 1),
      b("dataloader_drop_last", false), s("log_level", "null"),
      b("use_data_before_expert_parallelism", false)};
  block.other_keys = {"optimizer", "scheduler", "fp16", "bf16", "bfloat16", "torch_autocast", "amp",
                      "zero_optimization", "activation_checkpointing", "aio", "flops_profiler",
                      "comms_logger", "tensorboard", "wandb", "csv_monitor", "comet", "checkpoint",
                      "data_types", "timers", "compile", "hybrid_engine", "autotuning",
                      "elasticity", "pipeline", "progressive_layer_drop", "curriculum_learning",
                      "data_efficiency", "eigenvalue", "sequence_parallel_size", "tensor_parallel",
                      "weight_quantization", "monitor_config", "nebula", "compression_training",
                      "quantize_training", "sparse_attention"};
  if (version == DeepSpeedVersion::k0_19_8) drop_0198_top_level(block);
  return block;
}

BlockSpec zero_block() {
  BlockSpec block{"zero_optimization", true, true, {}, {}};
  block.fields = {
      i("stage", "0", 0, 3), b("contiguous_gradients", true), b("reduce_scatter", true),
      above(i("reduce_bucket_size", "500000000", 0)), b("use_multi_rank_bucket_allreduce", true),
      b("allgather_partitions", true), i("allgather_bucket_size", "500000000", 0),
      {"overlap_comm", FieldType::kBool, "null", "", {}, {}, {}, true},
      b("load_from_fp32_weights", true), b("elastic_checkpoint", false),
      i("sub_group_size", "1000000000", 0),
      i("stage3_prefetch_bucket_size", "50000000", 0, {}, "prefetch_bucket_size"),
      i("stage3_param_persistence_threshold", "100000", 0, {}, "param_persistence_threshold"),
      i("stage3_model_persistence_threshold", "9223372036854775807", 0, {},
        "model_persistence_threshold"),
      i("stage3_max_live_parameters", "1000000000", 0, {}, "max_live_parameters"),
      i("stage3_max_reuse_distance", "1000000000", 0, {}, "max_reuse_distance"),
      alias(b("stage3_gather_16bit_weights_on_model_save", false),
            "gather_16bit_weights_on_model_save"),
      i("stage3_module_granularity_threshold", "0", {}, {}, "module_granularity_threshold"),
      alias(b("stage3_use_all_reduce_for_fetch_params", false), "use_all_reduce_for_fetch_params"),
      alias(b("stage3_allgather_sequential", false), "allgather_sequential"),
      b("ignore_unused_parameters", true), b("legacy_stage1", false),
      b("round_robin_gradients", false), i("zero_hpz_partition_size", "1", 0),
      b("zero_quantized_weights", false), b("zero_quantized_nontrainable_weights", false),
      b("zero_quantized_gradients", false), b("memory_efficient_linear", true),
      b("pipeline_loading_checkpoint", false), b("override_module_apply", true),
      b("log_trace_cache_warnings", false), b("enable_sanity_checks", false),
      b("save_muon_momentum_buffer_in_memory", false), obj("zeropp_loco_param"),
      obj("leaf_module"), obj("zenflow")};
  block.other_keys = {"offload_param", "offload_optimizer", "cpu_offload", "cpu_offload_param",
                      "cpu_offload_use_pin_memory", "stage3_gather_fp16_weights_on_model_save",
                      "gather_fp16_weights_on_model_save", "mics_shard_size",
                      "mics_hierarchical_params_gather"};
  return block;
}

const std::vector<std::string> kOffloadDevices = {"none", "cpu", "nvme"};

BlockSpec offload_param_block() {
  BlockSpec block{"zero_optimization.offload_param", true, true, {}, {}};
  block.fields = {s("device", "\"none\"", kOffloadDevices), s("nvme_path", "null"),
                  i("buffer_count", "5", 0), i("buffer_size", "100000000", 0),
                  i("max_in_cpu", "1000000000", 0), b("pin_memory", true)};
  return block;
}

BlockSpec offload_optimizer_block() {
  BlockSpec block{"zero_optimization.offload_optimizer", true, true, {}, {}};
  block.fields = {s("device", "\"none\"", kOffloadDevices), s("nvme_path", "null"),
                  i("buffer_count", "4", 0), b("pin_memory", true), b("pipeline_read", false),
                  b("pipeline_write", false), b("fast_init", false), n("ratio", "1.0", 0, 1),
                  b("super_offload", false), n("cpuadam_cores_perc", "0.8", 0, 1)};
  return block;
}

BlockSpec precision_blocks_fp16() {
  BlockSpec block{"fp16", true, true, {}, {}};
  block.fields = {b("enabled", false), b("auto_cast", false), n("loss_scale", "0", 0),
                  i("initial_scale_power", "16", 0), i("loss_scale_window", "1000"),
                  i("hysteresis", "2"), b("consecutive_hysteresis", false),
                  i("min_loss_scale", "1"), b("fp16_master_weights_and_grads", false)};
  return block;
}

// deepspeed/compile/config.py's CompileConfig (pydantic, extra="forbid"): torch.compile itself is
// the engine's compile() call, so keys such as "disable" or "backend" are rejected here.
BlockSpec compile_block() {
  BlockSpec block{"compile", true, false, {}, {}};
  block.fields = {b("deepcompile", false), b("free_activation", false),
                  i("free_activation_threshold", "10485760"), b("offload_activation", false),
                  b("offload_activation_pin_memory", true), b("offload_opt_states", false),
                  b("double_buffer", true), b("symmetric_memory", false), b("debug_log", false),
                  b("offload_parameters", false), b("sync_before_reduce", false),
                  b("sync_after_reduce", false), b("sync_before_allgather", false),
                  b("sync_after_allgather", false), b("keep_int_input_tensors", true),
                  b("keep_all_input_tensors", false),
                  {"passes", FieldType::kStringList, "null", "", {}, {}, {"z1", "z3", "autosp", "autotp"}, true}};
  return block;
}

std::vector<BlockSpec> build_blocks(DeepSpeedVersion version) {
  std::vector<BlockSpec> blocks;
  blocks.push_back(top_level(version));
  blocks.push_back({"optimizer", false, false, {s("type", "null"), obj("params"),
                                                b("legacy_fusion", false)}, {}});
  blocks.push_back({"scheduler", false, false, {s("type", "null"), obj("params")}, {}});
  blocks.push_back(precision_blocks_fp16());
  blocks.push_back({"bf16", true, true, {b("enabled", false), b("immediate_grad_update", false),
                                         b("check_grad_overflow", true),
                                         b("bf16_master_weights_and_grads", false),
                                         b("bf16_optimizer_states", false)}, {}});
  blocks.push_back({"torch_autocast", false, true, {b("enabled", false),
                    s("dtype", "null", {"torch.float16", "torch.bfloat16", "float16", "bfloat16",
                                        "fp16", "bf16"}),
                    list("lower_precision_safe_modules", "null")}, {}});
  blocks.push_back(zero_block());
  blocks.push_back(offload_param_block());
  blocks.push_back(offload_optimizer_block());
  blocks.push_back({"activation_checkpointing", false, true,
                    {b("partition_activations", false), i("number_checkpoints", "null", 1),
                     b("contiguous_memory_optimization", false),
                     b("synchronize_checkpoint_boundary", false), b("profile", false),
                     b("cpu_checkpointing", false)}, {}});
  blocks.push_back({"aio", false, true,
                    {i("block_size", "1048576", 1), i("queue_depth", "8", 1),
                     i("intra_op_parallelism", "1", 1), b("single_submit", false),
                     b("overlap_events", true), b("use_gds", false)}, {"thread_count"}});
  blocks.push_back({"flops_profiler", false, true,
                    {b("enabled", false), n("recompute_fwd_factor", "0.0", 0),
                     i("profile_step", "1", 1), i("module_depth", "-1", -1), i("top_modules", "1", 1),
                     b("detailed", true), s("output_file", "null")}, {}});
  blocks.push_back({"comms_logger", true, true, {b("enabled", false), b("verbose", false),
                    b("prof_all", true), b("debug", false), list("prof_ops", "[]")}, {}});
  blocks.push_back({"tensorboard", true, true, {b("enabled", false), s("output_path", "\"\""),
                    s("job_name", "\"DeepSpeedJobName\"")}, {}});
  blocks.push_back({"wandb", true, true, {b("enabled", false), s("group", "null"),
                    s("team", "null"), s("project", "\"deepspeed\"")}, {}});
  blocks.push_back({"csv_monitor", true, true, {b("enabled", false), s("output_path", "\"\""),
                    s("job_name", "\"DeepSpeedJobName\"")}, {}});
  blocks.push_back({"comet", true, true,
                    {b("enabled", false), i("samples_log_interval", "100", 1), s("project", "null"),
                     s("workspace", "null"), s("api_key", "null"), s("experiment_name", "null"),
                     s("experiment_key", "null"),
                     {"online", FieldType::kBool, "null", "", {}, {}, {}, true},
                     s("mode", "null")}, {}});
  blocks.push_back({"checkpoint", false, true,
                    {s("tag_validation", "\"Warn\"", {"Ignore", "Warn", "Fail"}),
                     b("load_universal", false), b("use_node_local_storage", false),
                     b("checkpoint_serialization", true)}, {"parallel_write", "writer"}});
  blocks.push_back({"checkpoint.parallel_write", false, true, {b("pipeline_stage", false)}, {}});
  blocks.push_back({"checkpoint.writer", false, false,
                    {s("type", "\"FAST\"", {"MOCK", "PYTHON", "FAST"}),
                     i("io_buffer_size", "67108864", 1), b("io_buffer_double", true),
                     b("show_statistics", false),
                     s("data_parallel", "null", {"REPLICA", "SOCKET", "MACHINE"}),
                     b("decoupled", false), i("io_multiplier", "1", 1)}, {}});
  blocks.push_back({"data_types", false, true, {s("grad_accum_dtype", "null", kPrecisionNames),
                    s("param_dtype", "null", kPrecisionNames),
                    s("buffer_dtype", "null", kPrecisionNames)}, {}});
  // 0.19.8: "auto" (the model's _keep_in_fp32_modules) or a list of name patterns; its type is
  // checked by the runtime rules with DeepSpeed's message.
  if (version == DeepSpeedVersion::k0_19_8)
    blocks.back().fields.push_back({"keep_in_fp32_modules", FieldType::kAny, "\"auto\"", "", {}, {}, {}, false});
  blocks.push_back(compile_block());
  blocks.push_back({"timers", false, false, {}, {"throughput"}});
  blocks.push_back({"timers.throughput", true, false, {b("enabled", true), b("synchronized", true)}, {}});
  return blocks;
}

}  // namespace

const std::vector<BlockSpec>& config_blocks(DeepSpeedVersion version) {
  static const std::vector<BlockSpec> blocks_0197 = build_blocks(DeepSpeedVersion::k0_19_7);
  static const std::vector<BlockSpec> blocks_0198 = build_blocks(DeepSpeedVersion::k0_19_8);
  return version == DeepSpeedVersion::k0_19_8 ? blocks_0198 : blocks_0197;
}

const BlockSpec* find_block(const std::string& path) {
  for (const auto& block : config_blocks())
    if (block.path == path) return &block;
  return nullptr;
}

const FieldSpec* find_field(const BlockSpec& block, const std::string& key) {
  for (const auto& field : block.fields)
    if (field.name == key || (!field.alias.empty() && field.alias == key)) return &field;
  return nullptr;
}

std::vector<std::string> known_keys(const BlockSpec& block) {
  std::vector<std::string> keys;
  for (const auto& field : block.fields) {
    keys.push_back(field.name);
    if (!field.alias.empty()) keys.push_back(field.alias);
  }
  keys.insert(keys.end(), block.other_keys.begin(), block.other_keys.end());
  return keys;
}

}  // namespace shardscope::configs
