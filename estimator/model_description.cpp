#include "estimator/model_description.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

#include "estimator/byte_units.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

void require_positive(long long value, const char* name) {
  if (value <= 0)
    throw EstimatorError(std::string("transformer shape: '") + name + "' must be a positive integer, got " +
                         std::to_string(value));
}

void require_within_bounds(long long value, const char* name) {
  if (value > kMaxShapeDimension)
    throw EstimatorError(std::string("transformer shape: '") + name + "' is " + std::to_string(value) +
                         ", above the " + std::to_string(kMaxShapeDimension) +
                         " the estimator accepts for one dimension; check the value");
}

void validate_shape(const TransformerShape& s) {
  require_positive(s.layers, "layers");
  require_positive(s.hidden, "hidden");
  require_positive(s.heads, "heads");
  require_positive(s.vocab, "vocab");
  if (s.kv_heads < 0 || s.head_dim < 0 || s.ffn < 0 || s.seq_len < 0 || s.max_positions < 0)
    throw EstimatorError("transformer shape: kv_heads, head_dim, ffn, seq_len and max_positions must not be negative");
  const std::pair<long long, const char*> dimensions[] = {
      {s.layers, "layers"}, {s.hidden, "hidden"}, {s.heads, "heads"}, {s.kv_heads, "kv_heads"},
      {s.head_dim, "head_dim"}, {s.ffn, "ffn"}, {s.vocab, "vocab"}, {s.seq_len, "seq_len"},
      {s.max_positions, "max_positions"}};
  for (const auto& [value, name] : dimensions) require_within_bounds(value, name);
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    throw EstimatorError("transformer shape: hidden (" + std::to_string(s.hidden) +
                         ") is not divisible by heads (" + std::to_string(s.heads) +
                         "); give head_dim explicitly if the model uses one");
  if (s.heads % s.effective_kv_heads() != 0)
    throw EstimatorError("transformer shape: heads (" + std::to_string(s.heads) +
                         ") must be a multiple of kv_heads (" + std::to_string(s.kv_heads) + ")");
  if (s.learned_positions && s.max_positions == 0 && s.seq_len == 0)
    throw EstimatorError("transformer shape: layout " + std::string(layout_name(s.layout)) +
                         " has a learned position table; give max_positions or seq_len");
}

std::string scientific(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// A linear layer's parameters: in x out weights plus out biases when it has them.
double linear(double in, double out, bool bias) { return in * out + (bias ? out : 0.0); }

struct Module {
  const char* name;
  double params;
};

// The modules of one layer, each with its own parameters (DeepSpeed's recurse=False view).
std::vector<Module> layer_modules(const TransformerShape& s) {
  const double h = static_cast<double>(s.hidden);
  const double q = static_cast<double>(s.heads * s.effective_head_dim());
  const double kv = static_cast<double>(s.effective_kv_heads() * s.effective_head_dim());
  const double f = static_cast<double>(s.effective_ffn());
  const double norm = s.norm_has_bias ? 2 * h : h;
  std::vector<Module> m = {{"input_norm", norm}, {"post_attention_norm", norm}};
  if (s.layout == TransformerLayout::kLlama) {
    m.push_back({"q_proj", linear(h, q, s.qkv_bias)});
    m.push_back({"k_proj", linear(h, kv, s.qkv_bias)});
    m.push_back({"v_proj", linear(h, kv, s.qkv_bias)});
  } else {
    m.push_back({"qkv_proj (fused)", linear(h, q + 2 * kv, s.qkv_bias)});
  }
  m.push_back({"attn_out_proj", linear(q, h, s.attn_out_bias)});
  if (s.qk_norm) {
    m.push_back({"q_norm", static_cast<double>(s.effective_head_dim())});
    m.push_back({"k_norm", static_cast<double>(s.effective_head_dim())});
  }
  if (s.gated_mlp) m.push_back({"mlp_gate_proj", linear(h, f, s.mlp_bias)});
  m.push_back({"mlp_up_proj", linear(h, f, s.mlp_bias)});
  m.push_back({"mlp_down_proj", linear(f, h, s.mlp_bias)});
  return m;
}

void consider_largest(ParameterBreakdown& b, const std::string& name, double params) {
  if (params > b.largest_module) {
    b.largest_module = params;
    b.largest_module_name = name;
  }
}

}  // namespace

TransformerShape default_shape(TransformerLayout layout) {
  TransformerShape s;
  s.layout = layout;
  const bool classic = layout != TransformerLayout::kLlama;  // gpt2 and gpt_neox
  s.norm_has_bias = classic;
  s.gated_mlp = !classic;
  s.qkv_bias = classic;
  s.attn_out_bias = classic;
  s.mlp_bias = classic;
  s.learned_positions = layout == TransformerLayout::kGpt2;
  s.tied_embeddings = layout == TransformerLayout::kGpt2;
  s.dropout = false;  // the engine trains without dropout; --dropout counts its masks
  return s;
}

const char* layout_name(TransformerLayout layout) {
  switch (layout) {
    case TransformerLayout::kGpt2: return "gpt2";
    case TransformerLayout::kLlama: return "llama";
    case TransformerLayout::kGptNeox: return "gpt_neox";
  }
  return "?";
}

TransformerLayout parse_layout(const std::string& text, const std::string& what) {
  if (text == "gpt2") return TransformerLayout::kGpt2;
  if (text == "llama") return TransformerLayout::kLlama;
  if (text == "gpt_neox" || text == "gpt-neox" || text == "neox") return TransformerLayout::kGptNeox;
  throw EstimatorError(what + ": unknown layout '" + text + "'; expected gpt2, llama or gpt_neox");
}

ParameterBreakdown count_transformer_params(const TransformerShape& s) {
  validate_shape(s);
  ParameterBreakdown b;
  const double h = static_cast<double>(s.hidden);
  b.token_embedding = static_cast<double>(s.vocab) * h;
  consider_largest(b, "token_embedding", b.token_embedding);
  if (s.learned_positions) {
    const long long rows = s.max_positions > 0 ? s.max_positions : s.seq_len;
    b.position_embedding = static_cast<double>(rows) * h;
    consider_largest(b, "position_embedding", b.position_embedding);
  }
  for (const Module& m : layer_modules(s)) {
    b.per_layer += m.params;
    consider_largest(b, std::string("layer.") + m.name, m.params);
  }
  b.layers_total = b.per_layer * static_cast<double>(s.layers);
  b.final_norm = s.norm_has_bias ? 2 * h : h;
  if (!s.tied_embeddings) {
    b.lm_head = b.token_embedding;
    consider_largest(b, "lm_head", b.lm_head);
  }
  b.total = b.token_embedding + b.position_embedding + b.layers_total + b.final_norm + b.lm_head;
  return b;
}

void require_plausible_total(double total_params, const std::string& source, const std::string& inputs) {
  if (!(total_params <= kMaxModelParameters))
    throw EstimatorError(source + ": the model would have " + scientific(total_params) + " parameters, above the " +
                         scientific(kMaxModelParameters) + " the estimator accepts; check " + inputs);
}

ModelDescription describe_param_count(double total_params, double largest_layer_params) {
  if (!(total_params > 0) || !std::isfinite(total_params))
    throw EstimatorError("parameter count must be positive (e.g. --params 7e9 or 7B)");
  require_plausible_total(total_params, "parameter count", "the count (e.g. --params 7e9 or 7B)");
  if (largest_layer_params < 0 || largest_layer_params > total_params)
    throw EstimatorError("largest layer (" + std::to_string(largest_layer_params) +
                         " params) must lie between 0 and the total parameter count");
  ModelDescription d;
  d.name = "parameter count";
  d.source = ModelSource::kParamCount;
  d.total_params = total_params;
  d.largest_layer_params = largest_layer_params;
  d.largest_layer_name = largest_layer_params > 0 ? "given" : "";
  if (largest_layer_params == 0)
    d.notes.push_back("largest layer unknown: stage 3's gathered-layer memory is not counted "
                      "(give --largest-layer)");
  return d;
}

ModelDescription describe_transformer(const TransformerShape& shape, const std::string& name) {
  ModelDescription d;
  d.name = name;
  d.source = ModelSource::kShape;
  d.breakdown = count_transformer_params(shape);
  require_plausible_total(d.breakdown->total, name, "the layers, hidden, ffn and vocab sizes");
  d.shape = shape;
  d.total_params = d.breakdown->total;
  d.largest_layer_params = d.breakdown->largest_module;
  d.largest_layer_name = d.breakdown->largest_module_name;
  return d;
}

ModelDescription with_shape_of(ModelDescription counted, const ModelDescription& shaped) {
  counted.shape = shaped.shape;
  counted.name += " with the shape of " + shaped.name;
  if (shaped.total_params != counted.total_params)
    counted.notes.push_back("the config's layout counts " + whole_number(shaped.total_params) +
                            " parameters but the checkpoint holds " +
                            whole_number(counted.total_params) + "; using the checkpoint's");
  return counted;
}

}  // namespace shardscope::estimator
