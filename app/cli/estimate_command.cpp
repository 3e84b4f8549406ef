// shardscope estimate: memory per GPU and per CPU for each ZeRO stage and offload choice, the
// communication per step, and the lowest stage that fits. Flags only; the arithmetic is in
// estimator/.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/config_adapter.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"
#include "estimator/hf_config.hpp"
#include "estimator/safetensors_header.hpp"

namespace shardscope::app {
namespace {

namespace est = shardscope::estimator;

ArgParser make_parser() {
  ArgParser p("estimate",
              "Estimates memory per GPU and per node for ZeRO stages 0-3 with and without offload:\n"
              "model states (params, gradients, master weights, optimizer states), buffers, activations,\n"
              "communication per step, DeepSpeed's own estimate_zero2/zero3 tables, and a verdict.\n"
              "Give the model by exactly one of --params, --hf-config, --safetensors or --layers (shape).\n"
              "Flags override what --config sets. Exit 0 = estimated (and the plan fits if asked);\n"
              "1 = nothing fits, or the requested plan does not; 2 = bad flags or unreadable inputs.");
  p.option("params", "COUNT", "total parameters, e.g. 7e9 or 6.7B")
      .option("largest-layer", "COUNT", "parameters of the largest layer (ZeRO-3 gathers it whole)")
      .option("hf-config", "FILE", "a Hugging Face config.json (llama, mistral, qwen2, qwen3, gemma, gpt2, gpt_neox)")
      .option("hf-layout", "LAYOUT", "read another model_type with the llama, gpt2 or gpt_neox keys")
      .option("safetensors", "FILE", "a .safetensors file or model.safetensors.index.json (header only);\n"
                                     "with --hf-config: exact counts from the header, shape from the config")
      .option("layout", "LAYOUT", "shape: gpt2, llama or gpt_neox (default llama)")
      .option("layers", "N", "shape: decoder layers").option("hidden", "N", "shape: hidden size")
      .option("heads", "N", "shape: attention heads").option("kv-heads", "N", "shape: key/value heads (default heads)")
      .option("head-dim", "N", "shape: head dimension (default hidden/heads)")
      .option("ffn", "N", "shape: MLP inner size (default 4 x hidden)").option("vocab", "N", "shape: vocabulary size")
      .option("tied-embeddings", "yes|no", "shape: LM head shares the token embedding (default: layout's)")
      .option("config", "FILE", "a DeepSpeed config: stage, offload, precision, micro-batch, buckets")
      .option("stage", "0-3", "the ZeRO stage you plan to run (judged in the verdict)")
      .option("offload-optimizer", "DEVICE", "none, cpu or nvme (with --stage)")
      .option("offload-param", "DEVICE", "none, cpu or nvme (stage 3, with --stage)")
      .option("precision", "MODE", "bf16 (default), fp16 or fp32")
      .flag("low-precision-master", "16-bit master weights and grads (bf16/fp16_master_weights_and_grads)")
      .flag("low-precision-optimizer-states", "16-bit optimizer states (bf16_optimizer_states)")
      .option("optimizer", "NAME", "adamw (default), adam, lamb, sgd, adagrad, lion")
      .option("gpus-per-node", "G", "GPUs per node (default 1)").option("nodes", "N", "nodes (default 1)")
      .option("micro-batch", "B", "micro-batch per GPU (default 1)")
      .option("seq-len", "S", "sequence length (default: the model's maximum)")
      .option("grad-accum", "K", "gradient accumulation steps (default 1)")
      .option("checkpointing", "MODE", "activation checkpointing: none (default), selective or full")
      .flag("flash-attention", "fused attention: no s x s score matrices kept")
      .option("gpu-mem", "SIZE", "memory per GPU, e.g. 80GiB or 141GB")
      .option("gpu", "NAME", "a known GPU instead of --gpu-mem (see --list-gpus)")
      .option("cpu-mem", "SIZE", "host memory per node, e.g. 512GiB")
      .option("margin", "FRACTION", "memory kept free, e.g. 10% (default) or 0.15")
      .option("bandwidth", "RATE", "per-GPU link bandwidth within a node, e.g. 450GB/s")
      .option("inter-node-bandwidth", "RATE", "per-GPU bandwidth across nodes, e.g. 25GB/s or 200Gbit/s")
      .option("reduce-bucket-size", "COUNT", "elements (default 5e8)")
      .option("allgather-bucket-size", "COUNT", "elements (default 5e8)")
      .option("prefetch-bucket-size", "COUNT", "stage 3 elements (default 5e7)")
      .option("max-live-parameters", "COUNT", "stage 3 elements (default 1e9)")
      .option("buffer-factor", "F", "DeepSpeed estimators' additional_buffer_factor (default 1.5)")
      .option("units", "UNIT", "GiB (default, 2^30 bytes) or GB (1e9 bytes)")
      .flag("json", "print one JSON document (schema shardscope.estimate/1), sizes in bytes")
      .flag("explain", "add the formula behind every number")
      .flag("list-gpus", "list the GPUs --gpu knows and exit");
  return p;
}

long long positive_integer(const ParsedArgs& a, const std::string& name, long long fallback) {
  const auto value = a.integer(name);
  if (!value) return fallback;
  if (*value <= 0) throw UsageError("--" + name + " must be positive, got " + std::to_string(*value));
  return *value;
}

est::TransformerShape shape_from_flags(const ParsedArgs& a) {
  est::TransformerShape s = est::default_shape(
      a.value("layout") ? est::parse_layout(*a.value("layout"), "--layout") : est::TransformerLayout::kLlama);
  for (const char* required : {"layers", "hidden", "heads", "vocab"})
    if (!a.has(required))
      throw UsageError(std::string("a transformer shape needs --") + required + " (with --layers, --hidden, --heads, --vocab)");
  s.layers = positive_integer(a, "layers", 0);
  s.hidden = positive_integer(a, "hidden", 0);
  s.heads = positive_integer(a, "heads", 0);
  s.vocab = positive_integer(a, "vocab", 0);
  s.kv_heads = positive_integer(a, "kv-heads", 0);
  s.head_dim = positive_integer(a, "head-dim", 0);
  s.ffn = positive_integer(a, "ffn", 0);
  s.seq_len = positive_integer(a, "seq-len", 0);
  if (s.seq_len == 0) throw UsageError("a transformer shape needs --seq-len (activations depend on it)");
  if (auto tied = a.value("tied-embeddings")) {
    if (*tied != "yes" && *tied != "no") throw UsageError("--tied-embeddings expects yes or no, got '" + *tied + "'");
    s.tied_embeddings = *tied == "yes";
  }
  return s;
}

est::ModelDescription describe_model(const ParsedArgs& a) {
  int sources = 0;
  for (const char* flag : {"params", "hf-config", "safetensors", "layers"}) sources += a.has(flag) ? 1 : 0;
  // A checkpoint's header gives exact counts, its config.json the shape activations need.
  const bool header_and_config = sources == 2 && a.has("safetensors") && a.has("hf-config");
  if (sources != 1 && !header_and_config)
    throw UsageError("give the model by exactly one of --params, --hf-config, --safetensors or --layers "
                     "(or --safetensors with --hf-config; got " + std::to_string(sources) + ")");
  if (a.has("params")) {
    const double largest = a.value("largest-layer") ? est::parse_count(*a.value("largest-layer"), "--largest-layer") : 0;
    return est::describe_param_count(est::parse_count(*a.value("params"), "--params"), largest);
  }
  if (auto path = a.value("hf-config")) {
    est::HfConfigOptions options;
    if (auto layout = a.value("hf-layout")) options.layout_override = est::parse_layout(*layout, "--hf-layout");
    options.seq_len = positive_integer(a, "seq-len", 0);
    est::ModelDescription shaped = est::describe_hf_config_file(*path, options);
    if (header_and_config) return est::with_shape_of(est::describe_safetensors(*a.value("safetensors")), shaped);
    return shaped;
  }
  if (auto path = a.value("safetensors")) return est::describe_safetensors(*path);
  return est::describe_transformer(shape_from_flags(a), "transformer shape");
}

void apply_plan_flags(const ParsedArgs& a, est::EstimateOptions& o) {
  if (!a.has("stage") && !a.has("offload-optimizer") && !a.has("offload-param")) return;
  est::ZeroPlan plan = o.requested_plan.value_or(est::ZeroPlan{});
  if (a.has("stage")) {
    const long long stage = *a.integer("stage");
    if (stage < 0 || stage > 3) throw UsageError("--stage must be 0, 1, 2 or 3, got " + std::to_string(stage));
    plan.stage = static_cast<int>(stage);
  } else if (!o.requested_plan) {
    throw UsageError("--offload-optimizer and --offload-param need --stage (or --config)");
  }
  if (auto d = a.value("offload-optimizer")) plan.offload_optimizer = est::parse_offload(*d, "--offload-optimizer");
  if (auto d = a.value("offload-param")) plan.offload_param = est::parse_offload(*d, "--offload-param");
  o.requested_plan = plan;
}

void apply_memory_flags(const ParsedArgs& a, est::EstimateOptions& o) {
  est::ClusterSettings& c = o.cluster;
  if (a.has("gpu") && a.has("gpu-mem")) throw UsageError("give --gpu or --gpu-mem, not both");
  if (auto name = a.value("gpu")) {
    const est::GpuSpec gpu = est::require_gpu(*name, "--gpu");
    c.gpu_name = gpu.name;
    c.gpu_memory_bytes = gpu.memory_bytes;
  }
  if (auto size = a.value("gpu-mem")) c.gpu_memory_bytes = est::parse_byte_size(*size, "--gpu-mem");
  if (auto size = a.value("cpu-mem")) c.cpu_memory_bytes = est::parse_byte_size(*size, "--cpu-mem");
  if (auto margin = a.value("margin")) c.margin = est::parse_fraction(*margin, "--margin");
  if (auto bw = a.value("bandwidth")) c.intra_node_bandwidth = est::parse_bandwidth(*bw, "--bandwidth");
  if (auto bw = a.value("inter-node-bandwidth")) c.inter_node_bandwidth = est::parse_bandwidth(*bw, "--inter-node-bandwidth");
}

void apply_training_flags(const ParsedArgs& a, est::EstimateOptions& o) {
  est::PrecisionSettings& p = o.precision;
  if (auto mode = a.value("precision")) p.precision = est::parse_precision(*mode, "--precision");
  if (a.has("low-precision-master")) p.low_precision_master = true;
  if (a.has("low-precision-optimizer-states")) p.low_precision_optimizer_states = true;
  if (auto name = a.value("optimizer")) {
    p.optimizer = *name;
    p.optimizer_states_per_param = est::optimizer_states_per_param(*name, "--optimizer");
  }
  est::WorkloadSettings& w = o.workload;
  w.micro_batch = positive_integer(a, "micro-batch", w.micro_batch);
  w.seq_len = positive_integer(a, "seq-len", w.seq_len);
  w.grad_accum = positive_integer(a, "grad-accum", w.grad_accum);
  if (auto mode = a.value("checkpointing")) w.checkpointing = est::parse_checkpointing(*mode, "--checkpointing");
  if (a.has("flash-attention")) w.flash_attention = true;
  est::ZeroBuckets& b = o.buckets;
  if (auto v = a.value("reduce-bucket-size")) b.reduce_bucket_size = est::parse_count(*v, "--reduce-bucket-size");
  if (auto v = a.value("allgather-bucket-size")) b.allgather_bucket_size = est::parse_count(*v, "--allgather-bucket-size");
  if (auto v = a.value("prefetch-bucket-size")) b.prefetch_bucket_size = est::parse_count(*v, "--prefetch-bucket-size");
  if (auto v = a.value("max-live-parameters")) b.max_live_parameters = est::parse_count(*v, "--max-live-parameters");
  if (auto f = a.value("buffer-factor")) {
    try {
      o.deepspeed_buffer_factor = std::stod(*f);
    } catch (const std::exception&) {
      throw UsageError("--buffer-factor expects a number, got '" + *f + "'");
    }
  }
  if (auto unit = a.value("units")) {
    if (*unit != "GiB" && *unit != "GB") throw UsageError("--units expects GiB or GB, got '" + *unit + "'");
    o.display_unit = *unit == "GB" ? est::ByteUnit::kGB : est::ByteUnit::kGiB;
  }
}

void print_gpu_list() {
  // The peak is the datasheet's dense bf16 tensor-core figure (fp16 where the part has no bf16):
  // what MFU divides by when no peak was measured.
  std::cout << "GPU              memory (nvidia-smi)   nominal   link                             "
               "dense bf16 peak  form factor\n";
  for (const auto& gpu : est::gpu_catalog()) {
    std::string name = gpu.name;
    name.resize(17, ' ');
    char link[64], peak[32];
    std::snprintf(link, sizeof link, "%s (%.0f GB/s)", gpu.link.c_str(), gpu.link_bandwidth / 1e9);
    if (gpu.dense_bf16_tflops > 0)
      std::snprintf(peak, sizeof peak, "%7.1f TFLOP/s", gpu.dense_bf16_tflops);
    else if (gpu.dense_fp16_tflops > 0)
      std::snprintf(peak, sizeof peak, "%7.1f (fp16)", gpu.dense_fp16_tflops);
    else
      std::snprintf(peak, sizeof peak, "%7s", "-");
    char line[256];
    std::snprintf(line, sizeof line, "%s%8.2f GiB          %-9s %-32s %-16s %s\n", name.c_str(),
                  gpu.memory_bytes / est::kGiB, gpu.marketing_size.c_str(), link, peak, gpu.form_factor.c_str());
    std::cout << line;
  }
}

int run(const ParsedArgs& a) {
  est::EstimateOptions options;
  options.cluster.gpus_per_node = static_cast<int>(positive_integer(a, "gpus-per-node", 1));
  options.cluster.nodes = static_cast<int>(positive_integer(a, "nodes", 1));
  std::vector<std::string> config_notes;
  if (auto path = a.value("config")) config_notes = est::apply_config_file(*path, options);
  apply_plan_flags(a, options);
  apply_memory_flags(a, options);
  apply_training_flags(a, options);
  est::ModelDescription model = describe_model(a);
  for (const auto& note : config_notes) model.notes.push_back("config: " + note);
  const est::Estimate estimate = est::run_estimate(model, options);
  if (a.has("json"))
    std::cout << est::estimate_to_json(estimate).dump(2) << "\n";
  else
    std::cout << est::format_estimate_text(estimate, a.has("explain"));
  const est::Verdict& v = estimate.verdict;
  const bool failed = v.has_gpu_memory && (!v.recommended || (v.requested_fits && !*v.requested_fits));
  return failed ? kExitFindings : kExitOk;
}

}  // namespace

int run_estimate_command(const CommandArgs& args) {
  const ArgParser parser = make_parser();
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  if (parsed.has("list-gpus")) {
    print_gpu_list();
    return kExitOk;
  }
  try {
    return run(parsed);
  } catch (const est::EstimatorError& error) {
    // Unreadable or inconsistent inputs are usage errors: exit 2 with the message as written.
    throw UsageError(std::string("estimate: ") + error.what());
  }
}

}  // namespace shardscope::app
