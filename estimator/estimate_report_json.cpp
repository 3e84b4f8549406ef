// estimate_to_json: the machine-readable half of estimate_report.hpp.
#include <nlohmann/json.hpp>

#include "estimator/estimate_report.hpp"

namespace shardscope::estimator {
namespace {

using nlohmann::json;

json part_json(const MemoryPart& part) { return {{"bytes", part.bytes}, {"formula", part.formula}}; }

json parts_json(const ModelStateParts& parts) {
  return {{"params", part_json(parts.params)},
          {"gradients", part_json(parts.gradients)},
          {"master_params", part_json(parts.master_params)},
          {"optimizer_states", part_json(parts.optimizer_states)},
          {"total_bytes", parts.total()}};
}

json shape_json(const TransformerShape& s) {
  return {{"layout", layout_name(s.layout)}, {"layers", s.layers},       {"hidden", s.hidden},
          {"heads", s.heads},                {"kv_heads", s.effective_kv_heads()},
          {"head_dim", s.effective_head_dim()}, {"ffn", s.effective_ffn()}, {"vocab", s.vocab},
          {"seq_len", s.seq_len},            {"tied_embeddings", s.tied_embeddings},
          {"gated_mlp", s.gated_mlp},        {"qkv_bias", s.qkv_bias}, {"dropout", s.dropout}};
}

json model_json(const ModelDescription& m) {
  static const char* sources[] = {"param_count", "shape", "hf_config", "safetensors"};
  json j = {{"name", m.name},
            {"source", sources[static_cast<int>(m.source)]},
            {"total_params", m.total_params},
            {"largest_layer_params", m.largest_layer_params},
            {"largest_layer_name", m.largest_layer_name},
            {"notes", m.notes}};
  if (m.shape) j["shape"] = shape_json(*m.shape);
  if (m.breakdown)
    j["breakdown"] = {{"token_embedding", m.breakdown->token_embedding},
                      {"position_embedding", m.breakdown->position_embedding},
                      {"per_layer", m.breakdown->per_layer},
                      {"layers_total", m.breakdown->layers_total},
                      {"final_norm", m.breakdown->final_norm},
                      {"lm_head", m.breakdown->lm_head}};
  if (!m.params_by_dtype.empty()) {
    j["params_by_dtype"] = m.params_by_dtype;
    j["largest_tensor"] = {{"name", m.largest_tensor_name}, {"params", m.largest_tensor_params}};
  }
  return j;
}

json options_json(const EstimateOptions& o) {
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"precision", precision_name(o.precision.precision)},
          {"low_precision_master", o.precision.low_precision_master},
          {"low_precision_optimizer_states", o.precision.low_precision_optimizer_states},
          {"optimizer", o.precision.optimizer},
          {"optimizer_states_per_param", o.precision.optimizer_states_per_param},
          {"gpus_per_node", o.cluster.gpus_per_node},
          {"nodes", o.cluster.nodes},
          {"gpu_name", o.cluster.gpu_name},
          {"gpu_memory_bytes", optional(o.cluster.gpu_memory_bytes)},
          {"cpu_memory_bytes", optional(o.cluster.cpu_memory_bytes)},
          {"margin", o.cluster.margin},
          {"micro_batch", o.workload.micro_batch},
          {"grad_accum", o.workload.grad_accum},
          {"checkpointing", checkpointing_name(o.workload.checkpointing)},
          {"attention", attention_name(o.workload.attention)},
          {"dropout", o.workload.dropout},
          {"reduce_bucket_size", o.buckets.reduce_bucket_size},
          {"allgather_bucket_size", o.buckets.allgather_bucket_size},
          {"stage3_prefetch_bucket_size", o.buckets.prefetch_bucket_size},
          {"stage3_max_live_parameters", o.buckets.max_live_parameters},
          {"deepspeed_buffer_factor", o.deepspeed_buffer_factor}};
}

json plan_key(const ZeroPlan& p) {
  return {{"stage", p.stage},
          {"offload_optimizer", offload_name(p.offload_optimizer)},
          {"offload_param", offload_name(p.offload_param)}};
}

json plan_json(const PlanEstimate& p) {
  json j = plan_key(p.plan);
  j["gpu_rule"] = p.states.gpu_rule;
  j["model_states"] = {{"gpu", parts_json(p.states.gpu)},
                       {"cpu_per_node", parts_json(p.states.cpu_per_node)},
                       {"nvme_per_node", parts_json(p.states.nvme_per_node)}};
  json buffers = json::array();
  for (const auto& b : p.buffers.items)
    buffers.push_back({{"name", b.name}, {"config_key", b.config_key}, {"elements", b.elements}, {"bytes", b.bytes},
                       {"on_gpu", b.on_gpu}, {"counted", b.counted}, {"formula", b.formula}});
  j["buffers"] = {{"items", buffers}, {"gpu_bytes", p.buffers.gpu_bytes}, {"cpu_bytes_per_node", p.buffers.cpu_bytes_per_node}};
  json collectives = json::array();
  for (const auto& c : p.communication.collectives)
    collectives.push_back({{"op", c.op}, {"calls_per_step", c.calls_per_step}, {"buffer_bytes", c.buffer_bytes},
                           {"bytes_per_gpu", c.bytes_per_gpu}, {"formula", c.formula}});
  j["communication"] = {{"collectives", collectives},
                        {"bytes_per_gpu_per_step", p.communication.bytes_per_gpu},
                        {"parameter_bytes", p.communication.parameter_bytes},
                        {"bandwidth_bytes_per_s", p.communication.bandwidth ? json(*p.communication.bandwidth) : json(nullptr)},
                        {"bandwidth_source", p.communication.bandwidth_source},
                        {"seconds_per_step", p.communication.seconds_per_step ? json(*p.communication.seconds_per_step) : json(nullptr)}};
  j["gpu_total_bytes"] = p.gpu_total_bytes;
  j["peak"] = {{"phase", p.peak.phase},
               {"resident_states_bytes", p.peak.resident_states_bytes},
               {"buffers_bytes", p.peak.buffers_bytes},
               {"workspace_bytes", p.peak.workspace_bytes},
               {"head_phase_bytes", p.peak.head_phase_bytes},
               {"layer_phase_bytes", p.peak.layer_phase_bytes},
               {"end_phase_bytes", p.peak.end_phase_bytes},
               {"calibrated", p.peak.calibrated},
               {"calibration_note", p.peak.calibration_note},
               {"allocated_bytes", p.peak.allocated_bytes},
               {"reserved_bytes", p.peak.reserved_bytes},
               {"device_bytes", p.peak.device_bytes},
               {"device_upper_bytes", p.peak.device_upper_bytes},
               {"expected_error", p.peak.expected_error},
               {"formulas", p.peak.formulas}};
  json host_buffers = json::array();
  for (const auto& b : p.host.buffers)
    host_buffers.push_back({{"name", b.name}, {"bytes", b.bytes}, {"held_bytes", b.held}, {"pinned", b.pinned}});
  j["host_per_rank"] = {{"buffers", host_buffers},
                        {"pinned_bytes", p.host.pinned_bytes},
                        {"pageable_bytes", p.host.pageable_bytes},
                        {"process_bytes", p.host.process_bytes},
                        {"build_bytes", p.host.build_bytes},
                        {"steady_bytes", p.host.steady_bytes},
                        {"peak_bytes", p.host.peak_bytes},
                        {"nvme_bytes", p.host.nvme_bytes},
                        {"expected_error", p.host.expected_error},
                        {"formulas", p.host.formulas}};
  j["cpu_total_bytes_per_node"] = p.cpu_total_bytes_per_node;
  j["nvme_bytes_per_node"] = p.nvme_bytes_per_node;
  j["fits_gpu"] = p.fits_gpu ? json(*p.fits_gpu) : json(nullptr);
  j["fits_cpu"] = p.fits_cpu ? json(*p.fits_cpu) : json(nullptr);
  j["fits"] = p.fits_gpu ? json(p.fits()) : json(nullptr);
  j["max_micro_batch"] = p.max_micro_batch ? json(*p.max_micro_batch) : json(nullptr);
  return j;
}

json activations_json(const ActivationEstimate& a) {
  if (!a.available) return {{"available", false}, {"reason", a.unavailable_reason}};
  return {{"available", true},
          {"micro_batch", a.micro_batch},
          {"seq_len", a.seq_len},
          {"per_layer_bytes", a.per_layer_bytes},
          {"stored_per_layer_bytes", a.stored_per_layer_bytes},
          {"recompute_bytes", a.recompute_bytes},
          {"outside_layers_bytes", a.outside_layers_bytes},
          {"total_bytes", a.total_bytes},
          {"cpu_bytes_per_node", a.cpu_bytes_per_node},
          {"formula", a.formula}};
}

json deepspeed_json(const std::vector<DeepSpeedEstimateRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json j = {{"options", r.options_label()}, {"offload_optimizer", r.offload_optimizer},
              {"cpu_bytes", r.cpu_bytes},     {"gpu_bytes", r.gpu_bytes},
              {"cpu_formula", r.cpu_formula}, {"gpu_formula", r.gpu_formula}};
    if (r.stage == 3) {
      j["offload_param"] = r.offload_param;
      j["zero_init"] = r.zero_init.value_or(false);
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace

json estimate_to_json(const Estimate& e) {
  json plans = json::array();
  for (const auto& p : e.plans) plans.push_back(plan_json(p));
  const Verdict& v = e.verdict;
  json verdict = {{"summary", v.summary},
                  {"advice", v.advice},
                  {"usable_gpu_bytes", v.has_gpu_memory ? json(v.usable_gpu_bytes) : json(nullptr)},
                  {"usable_cpu_bytes", v.usable_cpu_bytes ? json(*v.usable_cpu_bytes) : json(nullptr)},
                  {"recommended", v.recommended ? plan_key(*v.recommended) : json(nullptr)},
                  {"requested", e.options.requested_plan ? plan_key(*e.options.requested_plan) : json(nullptr)},
                  {"requested_fits", v.requested_fits ? json(*v.requested_fits) : json(nullptr)}};
  return {{"schema", "shardscope.estimate/1"},
          {"units", "bytes (GB = 1e9, GiB = 2^30 where text says so)"},
          {"model", model_json(e.model)},
          {"options", options_json(e.options)},
          {"activations", activations_json(e.activations)},
          {"plans", plans},
          {"deepspeed",
           {{"note", "estimate_zero2/zero3_model_states_mem_needs (DeepSpeed 0.19.6-0.19.7): model states only, "
                     "host memory x additional_buffer_factor; DeepSpeed prints bytes/2^30 labelled GB"},
            {"buffer_factor", e.options.deepspeed_buffer_factor},
            {"zero2", deepspeed_json(e.deepspeed_zero2)},
            {"zero3", deepspeed_json(e.deepspeed_zero3)}}},
          {"verdict", verdict}};
}

}  // namespace shardscope::estimator
