// The built-in models' module trees for DeepSpeed's flops profiler. Each module lists the ops its
// own forward runs (children add theirs), with DeepSpeed's per-op formulas: Conv1D is addmm (mm
// without a bias), nn.Linear is F.linear, attention is F.scaled_dot_product_attention, norms
// count 5 FLOPs per element, activations one. Embeddings, dropout-free residual `+`, rotary
// `*` and the SwiGLU product count nothing: DeepSpeed patches none of them.
#include "engine/model_flops_profile.hpp"

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/models/model_error.hpp"

namespace shardscope::engine {
namespace {

using profiler::ModuleProfile;
using profiler::OpCount;
using profiler::Shape;

// One forward's dimensions of a decoder.
struct Dims {
  std::int64_t batch, seq, hidden, heads, kv_heads, head_dim, ffn, vocab, positions;
  double eps;
};

Dims decoder_dims(const TransformerOptions& o, std::int64_t micro_batch) {
  const auto& s = o.shape;
  return {micro_batch,        s.seq_len, s.hidden,         s.heads,
          s.effective_kv_heads(), s.effective_head_dim(), s.effective_ffn(), s.vocab,
          s.max_positions > 0 ? s.max_positions : s.seq_len, o.norm_eps};
}

// Python's repr of a float as torch's extra_repr prints eps (1e-05, 1e-06).
std::string py_float(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

using profiler::leaf_module;

ModuleProfile container(const std::string& name, const std::string& type, std::vector<ModuleProfile> children) {
  ModuleProfile m = leaf_module(name, type, "", 0);
  m.children = std::move(children);
  return m;
}

ModuleProfile linear(const std::string& name, const Dims& d, std::int64_t in, std::int64_t out, bool bias) {
  return profiler::linear_module(name, {d.batch, d.seq, in}, out, bias);
}

ModuleProfile conv1d(const std::string& name, const Dims& d, std::int64_t in, std::int64_t out, bool bias) {
  return profiler::conv1d_module(name, {d.batch, d.seq, in}, out, bias);
}

ModuleProfile layer_norm(const std::string& name, const Dims& d) {
  return leaf_module(name, "LayerNorm", "(" + std::to_string(d.hidden) + ",), eps=" + py_float(d.eps) + ", elementwise_affine=True",
                2 * d.hidden, profiler::layer_norm_op({d.batch, d.seq, d.hidden}, true));
}

// LlamaRMSNorm over `input` (last dimension = its width).
ModuleProfile rms_norm(const std::string& name, const Dims& d, const Shape& input) {
  return leaf_module(name, "LlamaRMSNorm", "(" + std::to_string(input.back()) + ",), eps=" + py_float(d.eps), input.back(),
                profiler::rms_norm_op(input, true));
}

ModuleProfile embedding(const std::string& name, std::int64_t rows, std::int64_t dim) {
  return leaf_module(name, "Embedding", std::to_string(rows) + ", " + std::to_string(dim), rows * dim, profiler::embedding_op());
}

OpCount sdpa(const Dims& d) {
  return profiler::attention_op({d.batch, d.heads, d.seq, d.head_dim}, {d.batch, d.kv_heads, d.seq, d.head_dim},
                                {d.batch, d.kv_heads, d.seq, d.head_dim});
}

ModuleProfile gpt2_block(const Dims& d, const estimator::TransformerShape& s, const std::string& name) {
  const std::int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  ModuleProfile attn = container("attn", "GPT2Attention",
                                 {conv1d("c_attn", d, d.hidden, q + 2 * kv, s.qkv_bias),
                                  conv1d("c_proj", d, q, d.hidden, s.attn_out_bias)});
  attn.add(sdpa(d));
  ModuleProfile mlp = container("mlp", "GPT2MLP",
                                {conv1d("c_fc", d, d.hidden, d.ffn, s.mlp_bias), conv1d("c_proj", d, d.ffn, d.hidden, s.mlp_bias)});
  mlp.add(profiler::activation_op({d.batch, d.seq, d.ffn}));  // gelu (tanh) on c_fc's output
  return container(name, "GPT2Block", {layer_norm("ln_1", d), std::move(attn), layer_norm("ln_2", d), std::move(mlp)});
}

ModuleProfile llama_attention(const Dims& d, const estimator::TransformerShape& s) {
  const std::int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  ModuleProfile attn = container("self_attn", "LlamaAttention",
                                 {linear("q_proj", d, d.hidden, q, s.qkv_bias), linear("k_proj", d, d.hidden, kv, s.qkv_bias),
                                  linear("v_proj", d, d.hidden, kv, s.qkv_bias), linear("o_proj", d, q, d.hidden, s.attn_out_bias)});
  if (s.qk_norm) {  // qwen3: per-head RMSNorm of q and k before the rotation
    attn.children.push_back(rms_norm("q_norm", d, {d.batch, d.seq, d.heads, d.head_dim}));
    attn.children.push_back(rms_norm("k_norm", d, {d.batch, d.seq, d.kv_heads, d.head_dim}));
  }
  attn.add(sdpa(d));
  return attn;
}

ModuleProfile llama_block(const Dims& d, const estimator::TransformerShape& s, const std::string& name) {
  ModuleProfile mlp = container("mlp", "LlamaMLP",
                                {linear("gate_proj", d, d.hidden, d.ffn, s.mlp_bias), linear("up_proj", d, d.hidden, d.ffn, s.mlp_bias),
                                 linear("down_proj", d, d.ffn, d.hidden, s.mlp_bias)});
  mlp.add(profiler::activation_op({d.batch, d.seq, d.ffn}));  // silu on gate_proj's output
  const Shape x{d.batch, d.seq, d.hidden};
  return container(name, "LlamaDecoderLayer", {rms_norm("input_layernorm", d, x), llama_attention(d, s),
                                               rms_norm("post_attention_layernorm", d, x), std::move(mlp)});
}

// lm_head: a Linear(hidden, vocab, bias=False). Tied to the token embedding it owns no weight of
// its own here, so the tree's total counts the shared matrix once, as model.parameters() does.
ModuleProfile lm_head(const Dims& d, bool tied) {
  ModuleProfile head = profiler::linear_module("lm_head", {d.batch, d.seq, d.hidden}, d.vocab, false);
  if (tied) head.params = 0;
  return head;
}

ModuleProfile gpt2_model(const TransformerOptions& o, std::int64_t micro_batch) {
  const Dims d = decoder_dims(o, micro_batch);
  ModuleProfile blocks = container("h", "ModuleList", {});
  for (long long i = 0; i < o.shape.layers; ++i) blocks.children.push_back(gpt2_block(d, o.shape, std::to_string(i)));
  ModuleProfile transformer = container("transformer", "GPT2Model",
                                        {embedding("wte", d.vocab, d.hidden), embedding("wpe", d.positions, d.hidden),
                                         std::move(blocks), layer_norm("ln_f", d)});
  return container("", "GPT2LMHeadModel", {std::move(transformer), lm_head(d, o.shape.tied_embeddings)});
}

ModuleProfile llama_model(const TransformerOptions& o, std::int64_t micro_batch) {
  const Dims d = decoder_dims(o, micro_batch);
  ModuleProfile layers = container("layers", "ModuleList", {});
  for (long long i = 0; i < o.shape.layers; ++i) layers.children.push_back(llama_block(d, o.shape, std::to_string(i)));
  ModuleProfile model = container("model", "LlamaModel",
                                  {embedding("embed_tokens", d.vocab, d.hidden), std::move(layers),
                                   rms_norm("norm", d, {d.batch, d.seq, d.hidden})});
  return container("", "LlamaForCausalLM", {std::move(model), lm_head(d, o.shape.tied_embeddings)});
}

// layers.N are nn.Linear with a bias; the ReLU between them is run by the top module's forward.
ModuleProfile mlp_model(const MlpOptions& o, std::int64_t micro_batch) {
  std::vector<std::int64_t> dims{o.input_dim};
  dims.insert(dims.end(), o.hidden_dims.begin(), o.hidden_dims.end());
  dims.push_back(o.output_dim);
  ModuleProfile layers = container("layers", "ModuleList", {});
  ModuleProfile root = leaf_module("", "MlpModel", "", 0);
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
    if (dims[i] <= 0 || dims[i + 1] <= 0)
      throw ModelError("mlp flops profile: dimension " + std::to_string(dims[i] <= 0 ? i : i + 1) +
                       " must be positive; give input, hidden and output sizes above zero");
    layers.children.push_back(profiler::linear_module(std::to_string(i), {micro_batch, dims[i]}, dims[i + 1], true));
    if (i + 2 < dims.size()) root.add(profiler::activation_op({micro_batch, dims[i + 1]}));
  }
  root.children.push_back(std::move(layers));
  return root;
}

}  // namespace

profiler::ModuleProfile model_module_profile(const ModelSpec& spec, std::int64_t micro_batch) {
  if (micro_batch <= 0)
    throw ModelError("flops profile: the micro-batch must be positive, got " + std::to_string(micro_batch) +
                     " (train_micro_batch_size_per_gpu)");
  validate_model_spec(spec);
  switch (spec.kind) {
    case ModelKind::kGpt2: return gpt2_model(spec.transformer, micro_batch);
    case ModelKind::kLlama: return llama_model(spec.transformer, micro_batch);
    case ModelKind::kMlp: break;
  }
  return mlp_model(spec.mlp, micro_batch);
}

double model_forward_flops(const ModelSpec& spec, std::int64_t micro_batch) {
  return profiler::total_flops(model_module_profile(spec, micro_batch));
}

namespace {

profiler::FlopsProfileOptions report_options(const configs::FlopsProfilerConfig& c, std::int64_t micro_batch,
                                             int world_size, double fwd_ms, double bwd_ms, double step_ms) {
  if (world_size <= 0) throw std::invalid_argument("flops profile: world size must be positive, got " + std::to_string(world_size));
  if (fwd_ms < 0) throw std::invalid_argument("flops profile: the forward latency must be measured (>= 0 ms)");
  profiler::FlopsProfileOptions o;
  o.profile_step = c.profile_step;
  o.module_depth = c.module_depth;
  o.top_modules = c.top_modules;
  o.detailed = c.detailed;
  o.recompute_fwd_factor = c.recompute_fwd_factor;
  o.world_size = o.data_parallel_size = world_size;  // no tensor or pipeline parallelism: mp_size 1
  o.micro_batch_per_gpu = micro_batch;
  o.fwd_latency_ms = fwd_ms;
  if (bwd_ms >= 0 && step_ms >= 0) {
    o.bwd_latency_ms = bwd_ms;
    o.step_latency_ms = step_ms;
  }
  return o;
}

bool has_tied_head(const ModelSpec& spec) { return spec.kind != ModelKind::kMlp && spec.transformer.shape.tied_embeddings; }

// Where ShardScope's profile differs from DeepSpeed's, worded as DeepSpeed words its caveats.
const char* const kLatencyNote =
    "The fwd latency listed in the top module's profile is the engine's forward timer for this step (the fwd latency "
    "shown above); ShardScope does not time each module, so every other module shows 0 s, 0% latency and 0 FLOPS.";
const char* const kTiedNote =
    "lm_head's weight is tied to the token embedding: its parameters are counted once, under the embedding, so "
    "lm_head shows 0 params.";

void replace_once(std::string& text, const std::string& anchor, const std::string& with) {
  const auto at = text.find(anchor);
  if (at != std::string::npos) text.replace(at, anchor.size(), with);
}

}  // namespace

std::string model_flops_report(const ModelSpec& spec, std::int64_t micro_batch, const configs::FlopsProfilerConfig& config,
                               int world_size, double fwd_ms, double bwd_ms, double step_ms) {
  ModuleProfile tree = model_module_profile(spec, micro_batch);
  tree.latency_ms = fwd_ms;
  std::string text =
      profiler::format_model_profile(tree, report_options(config, micro_batch, world_size, fwd_ms, bwd_ms, step_ms));
  // DeepSpeed's third note says the top module's latency is smaller than the engine's; here it is
  // the engine's, and no other module is timed.
  std::string notes = std::string("3. ") + kLatencyNote + "\n";
  if (has_tied_head(spec)) notes += std::string("4. ") + kTiedNote + "\n";
  replace_once(text,
               "3. The fwd latency listed in the top module's profile is directly captured at the module forward "
               "function in PyTorch, thus it's less than the fwd latency shown above which is captured in DeepSpeed.\n",
               notes);
  replace_once(text, "Top " + std::to_string(config.top_modules) + " modules in terms of",
               "Note: fwd latency is measured for the top module only; deeper modules are not timed and show 0 s.\nTop " +
                   std::to_string(config.top_modules) + " modules in terms of");
  return text;
}

nlohmann::json model_flops_report_json(const ModelSpec& spec, std::int64_t micro_batch,
                                       const configs::FlopsProfilerConfig& config, int world_size, double fwd_ms,
                                       double bwd_ms, double step_ms) {
  ModuleProfile tree = model_module_profile(spec, micro_batch);
  tree.latency_ms = fwd_ms;
  nlohmann::json out =
      profiler::model_profile_to_json(tree, report_options(config, micro_batch, world_size, fwd_ms, bwd_ms, step_ms));
  out["model"] = model_kind_name(spec.kind);
  out["micro_batch"] = micro_batch;
  out["tokens_per_micro_batch"] = spec.kind == ModelKind::kMlp ? micro_batch : micro_batch * spec.transformer.shape.seq_len;
  out["per_module_latency_measured"] = false;
  out["notes"] = nlohmann::json::array({kLatencyNote});
  if (has_tied_head(spec)) out["notes"].push_back(kTiedNote);
  return out;
}

}  // namespace shardscope::engine
