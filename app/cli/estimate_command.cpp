// shardscope estimate: memory per GPU and per CPU for each ZeRO stage and offload choice, the
// communication per step, and the lowest stage that fits. Flags only; the arithmetic is in
// estimator/.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/estimate_request.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::app {
namespace {

namespace est = shardscope::estimator;

ArgParser estimate_parser() {
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
      .option("config", "FILE", "a DeepSpeed config: stage, offload, precision, micro-batch, buckets (validated\n"
                                "under --deepspeed-version's rules first)")
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
      .option("attention", "KERNEL", "fused (default: scaled_dot_product_attention, as the engine and current Hugging Face\n"
              "models run it, no s x s scores kept) or materialized (eager attention keeps the scores)")
      .flag("flash-attention", "the same as --attention fused (the default), kept for older scripts")
      .flag("dropout", "count dropout masks (the engine trains without dropout; Hugging Face models in train mode have it)")
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
  add_deepspeed_version_option(p);
  return p;
}

std::optional<long long> integer_flag(const ParsedArgs& a, const char* name) { return a.integer(name); }

std::optional<double> count_flag(const ParsedArgs& a, const char* name) {
  const auto text = a.value(name);
  return text ? std::optional<double>(est::parse_count(*text, std::string("--") + name)) : std::nullopt;
}

void read_model_flags(const ParsedArgs& a, est::EstimateRequest& r) {
  int sources = 0;
  for (const char* flag : {"params", "hf-config", "safetensors", "layers"}) sources += a.has(flag) ? 1 : 0;
  // A checkpoint's header gives exact counts, its config.json the shape activations need.
  const bool header_and_config = sources == 2 && a.has("safetensors") && a.has("hf-config");
  if (sources != 1 && !header_and_config)
    throw UsageError("give the model by exactly one of --params, --hf-config, --safetensors or --layers "
                     "(or --safetensors with --hf-config; got " + std::to_string(sources) + ")");
  r.source = a.has("params")        ? est::ModelSource::kParamCount
             : a.has("safetensors") ? est::ModelSource::kSafetensors
             : a.has("hf-config")   ? est::ModelSource::kHfConfig
                                    : est::ModelSource::kShape;
  r.params = count_flag(a, "params");
  r.largest_layer = count_flag(a, "largest-layer");
  if (auto layout = a.value("layout")) r.layout = est::parse_layout(*layout, "--layout");
  r.layers = integer_flag(a, "layers");
  r.hidden = integer_flag(a, "hidden");
  r.heads = integer_flag(a, "heads");
  r.kv_heads = integer_flag(a, "kv-heads");
  r.head_dim = integer_flag(a, "head-dim");
  r.ffn = integer_flag(a, "ffn");
  r.vocab = integer_flag(a, "vocab");
  if (auto tied = a.value("tied-embeddings")) {
    if (*tied != "yes" && *tied != "no") throw UsageError("--tied-embeddings expects yes or no, got '" + *tied + "'");
    r.tied_embeddings = *tied == "yes";
  }
  r.hf_config = a.value("hf-config").value_or("");
  if (auto layout = a.value("hf-layout")) r.hf_layout = est::parse_layout(*layout, "--hf-layout");
  r.safetensors = a.value("safetensors").value_or("");
}

void read_training_flags(const ParsedArgs& a, est::EstimateRequest& r) {
  r.config = a.value("config").value_or("");
  if (auto stage = a.integer("stage")) r.stage = static_cast<int>(*stage);
  if (auto d = a.value("offload-optimizer")) r.offload_optimizer = est::parse_offload(*d, "--offload-optimizer");
  if (auto d = a.value("offload-param")) r.offload_param = est::parse_offload(*d, "--offload-param");
  if (auto mode = a.value("precision")) r.precision = est::parse_precision(*mode, "--precision");
  r.low_precision_master = a.has("low-precision-master");
  r.low_precision_optimizer_states = a.has("low-precision-optimizer-states");
  r.optimizer = a.value("optimizer");
  r.micro_batch = integer_flag(a, "micro-batch");
  r.seq_len = integer_flag(a, "seq-len");
  r.grad_accum = integer_flag(a, "grad-accum");
  if (auto mode = a.value("checkpointing")) r.checkpointing = est::parse_checkpointing(*mode, "--checkpointing");
  r.flash_attention = a.has("flash-attention");
  if (auto kernel = a.value("attention")) r.attention = est::parse_attention(*kernel, "--attention");
  r.dropout = a.has("dropout");
  r.reduce_bucket_size = count_flag(a, "reduce-bucket-size");
  r.allgather_bucket_size = count_flag(a, "allgather-bucket-size");
  r.prefetch_bucket_size = count_flag(a, "prefetch-bucket-size");
  r.max_live_parameters = count_flag(a, "max-live-parameters");
  if (auto f = a.value("buffer-factor")) {
    try {
      r.buffer_factor = std::stod(*f);
    } catch (const std::exception&) {
      throw UsageError("--buffer-factor expects a number, got '" + *f + "'");
    }
  }
  if (auto unit = a.value("units")) {
    if (*unit != "GiB" && *unit != "GB") throw UsageError("--units expects GiB or GB, got '" + *unit + "'");
    r.units = *unit == "GB" ? est::ByteUnit::kGB : est::ByteUnit::kGiB;
  }
}

void read_cluster_flags(const ParsedArgs& a, est::EstimateRequest& r) {
  if (auto g = a.integer("gpus-per-node")) r.gpus_per_node = static_cast<int>(*g);
  if (auto n = a.integer("nodes")) r.nodes = static_cast<int>(*n);
  r.gpu = a.value("gpu").value_or("");
  if (auto size = a.value("gpu-mem")) r.gpu_memory_bytes = est::parse_byte_size(*size, "--gpu-mem");
  if (auto size = a.value("cpu-mem")) r.cpu_memory_bytes = est::parse_byte_size(*size, "--cpu-mem");
  if (auto margin = a.value("margin")) r.margin = est::parse_fraction(*margin, "--margin");
  if (auto bw = a.value("bandwidth")) r.bandwidth = est::parse_bandwidth(*bw, "--bandwidth");
  if (auto bw = a.value("inter-node-bandwidth")) r.inter_node_bandwidth = est::parse_bandwidth(*bw, "--inter-node-bandwidth");
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
  // The flags become the request the GUI's Estimator page also builds; the library does the rest.
  est::EstimateRequest request;
  read_model_flags(a, request);
  read_training_flags(a, request);
  read_cluster_flags(a, request);
  // DeepSpeed's rules judge the --config file only; a bad --deepspeed-version is refused either way.
  std::optional<configs::DeepSpeedRules> rules;
  if (!request.config.empty() || a.value("deepspeed-version")) rules = deepspeed_rules_from(a);
  if (rules) request.deepspeed_version = rules->version;
  if (rules && !request.config.empty() && !a.has("json")) std::cout << "rules: " << rules->describe() << "\n";
  const est::Estimate estimate = est::estimate_request(request);
  if (a.has("json")) {
    nlohmann::json out = est::estimate_to_json(estimate);
    if (rules && !request.config.empty()) {
      out["deepspeed_version"] = configs::to_string(rules->version);
      out["deepspeed_rules"] = rules->describe();
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << est::format_estimate_text(estimate, a.has("explain"));
  }
  return est::estimate_failed(estimate) ? kExitFindings : kExitOk;
}

}  // namespace

int run_estimate_command(const CommandArgs& args) {
  const ArgParser parser = estimate_parser();
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
