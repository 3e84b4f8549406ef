#include "estimator/estimate_request.hpp"

#include <sstream>

#include "estimator/config_adapter.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"
#include "estimator/hf_config.hpp"
#include "estimator/safetensors_header.hpp"

namespace shardscope::estimator {
namespace {

template <typename T>
T positive(const std::optional<T>& value, const char* flag, T fallback) {
  if (!value) return fallback;
  if (*value <= 0) throw EstimatorError(std::string("--") + flag + " must be positive, got " + std::to_string(*value));
  return *value;
}

void apply_plan(const EstimateRequest& r, EstimateOptions& o) {
  if (!r.stage && !r.offload_optimizer && !r.offload_param) return;
  ZeroPlan plan = o.requested_plan.value_or(ZeroPlan{});
  if (r.stage) {
    if (*r.stage < 0 || *r.stage > 3) throw EstimatorError("--stage must be 0, 1, 2 or 3, got " + std::to_string(*r.stage));
    plan.stage = *r.stage;
  } else if (!o.requested_plan) {
    throw EstimatorError("--offload-optimizer and --offload-param need --stage (or --config)");
  }
  if (r.offload_optimizer) plan.offload_optimizer = *r.offload_optimizer;
  if (r.offload_param) plan.offload_param = *r.offload_param;
  o.requested_plan = plan;
}

void apply_cluster(const EstimateRequest& r, EstimateOptions& o) {
  ClusterSettings& c = o.cluster;
  if (!r.gpu.empty() && r.gpu_memory_bytes) throw EstimatorError("give --gpu or --gpu-mem, not both");
  if (!r.gpu.empty()) {
    const GpuSpec gpu = require_gpu(r.gpu, "--gpu");
    c.gpu_name = gpu.name;
    c.gpu_memory_bytes = gpu.memory_bytes;
  }
  if (r.gpu_memory_bytes) c.gpu_memory_bytes = positive(r.gpu_memory_bytes, "gpu-mem", 0.0);
  if (r.cpu_memory_bytes) c.cpu_memory_bytes = positive(r.cpu_memory_bytes, "cpu-mem", 0.0);
  if (r.margin) {
    if (*r.margin < 0 || *r.margin >= 1) throw EstimatorError("--margin must lie in [0, 1), got " + std::to_string(*r.margin));
    c.margin = *r.margin;
  }
  if (r.bandwidth) c.intra_node_bandwidth = positive(r.bandwidth, "bandwidth", 0.0);
  if (r.inter_node_bandwidth) c.inter_node_bandwidth = positive(r.inter_node_bandwidth, "inter-node-bandwidth", 0.0);
}

void apply_training(const EstimateRequest& r, EstimateOptions& o) {
  PrecisionSettings& p = o.precision;
  if (r.precision) p.precision = *r.precision;
  if (r.low_precision_master) p.low_precision_master = true;
  if (r.low_precision_optimizer_states) p.low_precision_optimizer_states = true;
  if (r.optimizer) {
    p.optimizer = *r.optimizer;
    p.optimizer_states_per_param = optimizer_states_per_param(*r.optimizer, "--optimizer");
  }
  WorkloadSettings& w = o.workload;
  w.micro_batch = positive(r.micro_batch, "micro-batch", w.micro_batch);
  w.seq_len = positive(r.seq_len, "seq-len", w.seq_len);
  w.grad_accum = positive(r.grad_accum, "grad-accum", w.grad_accum);
  if (r.checkpointing) w.checkpointing = *r.checkpointing;
  if (r.flash_attention) w.attention = AttentionKernel::kFused;
  if (r.attention) w.attention = *r.attention;
  if (r.dropout) w.dropout = true;
  ZeroBuckets& b = o.buckets;
  b.reduce_bucket_size = positive(r.reduce_bucket_size, "reduce-bucket-size", b.reduce_bucket_size);
  b.allgather_bucket_size = positive(r.allgather_bucket_size, "allgather-bucket-size", b.allgather_bucket_size);
  b.prefetch_bucket_size = positive(r.prefetch_bucket_size, "prefetch-bucket-size", b.prefetch_bucket_size);
  b.max_live_parameters = positive(r.max_live_parameters, "max-live-parameters", b.max_live_parameters);
  o.deepspeed_buffer_factor = positive(r.buffer_factor, "buffer-factor", o.deepspeed_buffer_factor);
  if (r.units) o.display_unit = *r.units;
}

TransformerShape requested_shape(const EstimateRequest& r) {
  TransformerShape s = default_shape(r.layout.value_or(TransformerLayout::kLlama));
  const std::pair<const char*, const std::optional<long long>*> required[] = {
      {"layers", &r.layers}, {"hidden", &r.hidden}, {"heads", &r.heads}, {"vocab", &r.vocab}};
  for (const auto& [flag, value] : required)
    if (!*value)
      throw EstimatorError(std::string("a transformer shape needs --") + flag + " (with --layers, --hidden, --heads, --vocab)");
  s.layers = positive(r.layers, "layers", 0LL);
  s.hidden = positive(r.hidden, "hidden", 0LL);
  s.heads = positive(r.heads, "heads", 0LL);
  s.vocab = positive(r.vocab, "vocab", 0LL);
  s.kv_heads = positive(r.kv_heads, "kv-heads", 0LL);
  s.head_dim = positive(r.head_dim, "head-dim", 0LL);
  s.ffn = positive(r.ffn, "ffn", 0LL);
  s.seq_len = positive(r.seq_len, "seq-len", 0LL);
  if (s.seq_len == 0) throw EstimatorError("a transformer shape needs --seq-len (activations depend on it)");
  if (r.tied_embeddings) s.tied_embeddings = *r.tied_embeddings;
  return s;
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

/// Sizes as the CLI reads them: "80GiB" when whole GiB, else plain bytes.
std::string size_text(double bytes) {
  const double gib = bytes / kGiB;
  return gib == static_cast<double>(static_cast<long long>(gib)) ? std::to_string(static_cast<long long>(gib)) + "GiB"
                                                                 : number(bytes);
}

/// Rates as the CLI reads them: "450GB/s" when whole GB/s, else bytes per second.
std::string rate_text(double bytes_per_s) {
  const double gbps = bytes_per_s / kGB;
  return gbps == static_cast<double>(static_cast<long long>(gbps)) ? std::to_string(static_cast<long long>(gbps)) + "GB/s"
                                                                   : number(bytes_per_s) + "B/s";
}

void add_model_arguments(const EstimateRequest& r, std::vector<std::string>& a) {
  auto add = [&a](const char* flag, const std::string& value) { a.insert(a.end(), {std::string("--") + flag, value}); };
  auto add_count = [&add](const char* flag, const std::optional<long long>& v) {
    if (v) add(flag, std::to_string(*v));
  };
  switch (r.source) {
    case ModelSource::kParamCount:
      if (r.params) add("params", number(*r.params));
      if (r.largest_layer) add("largest-layer", number(*r.largest_layer));
      return;
    case ModelSource::kShape:
      if (r.layout) add("layout", layout_name(*r.layout));
      for (auto [flag, value] : {std::pair{"layers", &r.layers}, {"hidden", &r.hidden}, {"heads", &r.heads},
                                 {"kv-heads", &r.kv_heads}, {"head-dim", &r.head_dim}, {"ffn", &r.ffn},
                                 {"vocab", &r.vocab}})
        add_count(flag, *value);
      if (r.tied_embeddings) add("tied-embeddings", *r.tied_embeddings ? "yes" : "no");
      return;
    case ModelSource::kSafetensors:
      add("safetensors", r.safetensors);
      if (!r.hf_config.empty()) add("hf-config", r.hf_config);
      return;
    case ModelSource::kHfConfig:
      add("hf-config", r.hf_config);
      if (r.hf_layout) add("hf-layout", layout_name(*r.hf_layout));
      return;
  }
}

}  // namespace

EstimateOptions estimate_request_options(const EstimateRequest& r, std::vector<std::string>* config_notes) {
  EstimateOptions o;
  o.cluster.gpus_per_node = positive(r.gpus_per_node, "gpus-per-node", o.cluster.gpus_per_node);
  o.cluster.nodes = positive(r.nodes, "nodes", o.cluster.nodes);
  if (!r.config.empty()) {
    // Sized for gpus per node x nodes, as DeepSpeed would be, under the chosen release's rules.
    auto notes = apply_config_file(r.config, o, r.deepspeed_version);
    if (config_notes) config_notes->insert(config_notes->end(), notes.begin(), notes.end());
  }
  apply_plan(r, o);
  apply_cluster(r, o);
  apply_training(r, o);
  return o;
}

ModelDescription describe_requested_model(const EstimateRequest& r) {
  HfConfigOptions hf;
  hf.layout_override = r.hf_layout;
  hf.seq_len = positive(r.seq_len, "seq-len", 0LL);
  switch (r.source) {
    case ModelSource::kParamCount:
      if (!r.params) throw EstimatorError("give the model's parameter count (--params, e.g. 7B)");
      return describe_param_count(positive(r.params, "params", 0.0), r.largest_layer.value_or(0));
    case ModelSource::kShape:
      return describe_transformer(requested_shape(r), "transformer shape");
    case ModelSource::kHfConfig:
      if (r.hf_config.empty()) throw EstimatorError("give a Hugging Face config.json (--hf-config FILE)");
      return describe_hf_config_file(r.hf_config, hf);
    case ModelSource::kSafetensors: {
      if (r.safetensors.empty()) throw EstimatorError("give a .safetensors file or its index.json (--safetensors FILE)");
      ModelDescription counted = describe_safetensors(r.safetensors);
      // The header gives exact counts, a config.json the shape activations need.
      return r.hf_config.empty() ? counted : with_shape_of(counted, describe_hf_config_file(r.hf_config, hf));
    }
  }
  throw EstimatorError("unknown model source");
}

Estimate estimate_request(const EstimateRequest& request) {
  std::vector<std::string> notes;
  const EstimateOptions options = estimate_request_options(request, &notes);
  ModelDescription model = describe_requested_model(request);
  for (const auto& note : notes) model.notes.push_back("config: " + note);
  return run_estimate(model, options);
}

std::vector<std::string> estimate_request_arguments(const EstimateRequest& r) {
  std::vector<std::string> a;
  add_model_arguments(r, a);
  auto add = [&a](const char* flag, const std::string& value) { a.insert(a.end(), {std::string("--") + flag, value}); };
  auto add_flag = [&a](const char* flag, bool on) {
    if (on) a.push_back(std::string("--") + flag);
  };
  if (!r.config.empty()) add("config", r.config);
  if (r.stage) add("stage", std::to_string(*r.stage));
  if (r.offload_optimizer) add("offload-optimizer", offload_name(*r.offload_optimizer));
  if (r.offload_param) add("offload-param", offload_name(*r.offload_param));
  if (r.precision) add("precision", precision_name(*r.precision));
  add_flag("low-precision-master", r.low_precision_master);
  add_flag("low-precision-optimizer-states", r.low_precision_optimizer_states);
  if (r.optimizer) add("optimizer", *r.optimizer);
  if (r.gpus_per_node) add("gpus-per-node", std::to_string(*r.gpus_per_node));
  if (r.nodes) add("nodes", std::to_string(*r.nodes));
  if (r.micro_batch) add("micro-batch", std::to_string(*r.micro_batch));
  if (r.seq_len) add("seq-len", std::to_string(*r.seq_len));
  if (r.grad_accum) add("grad-accum", std::to_string(*r.grad_accum));
  if (r.checkpointing) add("checkpointing", checkpointing_name(*r.checkpointing));
  add_flag("flash-attention", r.flash_attention);
  if (r.attention) add("attention", attention_name(*r.attention));
  add_flag("dropout", r.dropout);
  if (!r.gpu.empty()) add("gpu", r.gpu);
  if (r.gpu_memory_bytes) add("gpu-mem", size_text(*r.gpu_memory_bytes));
  if (r.cpu_memory_bytes) add("cpu-mem", size_text(*r.cpu_memory_bytes));
  if (r.margin) add("margin", number(*r.margin));
  if (r.bandwidth) add("bandwidth", rate_text(*r.bandwidth));
  if (r.inter_node_bandwidth) add("inter-node-bandwidth", rate_text(*r.inter_node_bandwidth));
  for (auto [flag, value] : {std::pair{"reduce-bucket-size", &r.reduce_bucket_size},
                             {"allgather-bucket-size", &r.allgather_bucket_size},
                             {"prefetch-bucket-size", &r.prefetch_bucket_size},
                             {"max-live-parameters", &r.max_live_parameters}, {"buffer-factor", &r.buffer_factor}})
    if (*value) add(flag, number(**value));
  if (r.units) add("units", unit_name(*r.units));
  return a;
}

bool estimate_failed(const Estimate& estimate) {
  const Verdict& v = estimate.verdict;
  return v.has_gpu_memory && (!v.recommended || (v.requested_fits && !*v.requested_fits));
}

}  // namespace shardscope::estimator
