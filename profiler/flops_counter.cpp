// DeepSpeed's per-op FLOPs/MACs formulas (profiler.py: _linear_flops_compute, _addmm_flops_compute,
// _matmul_flops_compute, _layer_norm_flops_compute, _gelu/_silu/_softmax_flops_compute,
// _elementwise_flops_compute, _attn_flops_compute) and the built-in decoder blocks.
#include "profiler/flops_counter.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace shardscope::profiler {
namespace {

double numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), 1.0,
                         [](double a, std::int64_t b) { return a * static_cast<double>(b); });
}

double last(const Shape& shape, const char* op) {
  if (shape.empty()) throw std::invalid_argument(std::string(op) + ": a shape needs at least one dimension");
  return static_cast<double>(shape.back());
}

std::string bool_text(bool b) { return b ? "True" : "False"; }

ModuleProfile linear(const std::string& name, const DecoderBlockShape& s, std::int64_t in, std::int64_t out,
                     bool bias) {
  return linear_module(name, {s.batch, s.seq, in}, out, bias);
}

ModuleProfile conv1d(const std::string& name, const DecoderBlockShape& s, std::int64_t in, std::int64_t out,
                     bool bias) {
  return conv1d_module(name, {s.batch, s.seq, in}, out, bias);
}

ModuleProfile norm(const std::string& name, const std::string& type, const DecoderBlockShape& s, bool layer_norm) {
  const Shape x{s.batch, s.seq, s.hidden};
  return layer_norm ? leaf_module(name, type, "(" + std::to_string(s.hidden) + ",), eps=1e-05, elementwise_affine=True",
                           2 * s.hidden, layer_norm_op(x, true))
                    : leaf_module(name, type, "", s.hidden, rms_norm_op(x, true));
}

OpCount sdpa(const DecoderBlockShape& s) {
  const std::int64_t d = s.hidden / s.heads;
  return attention_op({s.batch, s.heads, s.seq, d}, {s.batch, s.kv_heads, s.seq, d}, {s.batch, s.kv_heads, s.seq, d});
}

ModuleProfile container(const std::string& name, const std::string& type, std::vector<ModuleProfile> children) {
  ModuleProfile m;
  m.name = name;
  m.type = type;
  m.children = std::move(children);
  return m;
}

void check_shape(const DecoderBlockShape& s) {
  if (s.hidden <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.ffn <= 0 || s.batch <= 0 || s.seq <= 0 ||
      s.hidden % s.heads != 0 || s.heads % s.kv_heads != 0)
    throw std::invalid_argument("decoder block shape: hidden, heads, kv_heads, ffn, batch and seq must be > 0, hidden "
                                "divisible by heads and heads by kv_heads");
}

}  // namespace

OpCount linear_op(const Shape& input, std::int64_t out_features) {
  const double macs = numel(input) * static_cast<double>(out_features);
  return {2 * macs, macs};
}

OpCount addmm_op(const Shape& bias, const Shape& mat1, const Shape& mat2) {
  const double macs = numel(mat1) * last(mat2, "addmm");
  return {2 * macs + numel(bias), macs};
}

OpCount matmul_op(const Shape& a, const Shape& b) {
  const double macs = numel(a) * last(b, "matmul");
  return {2 * macs, macs};
}

OpCount layer_norm_op(const Shape& input, bool affine) { return {numel(input) * (affine ? 5 : 4), 0}; }
OpCount rms_norm_op(const Shape& input, bool affine) { return layer_norm_op(input, affine); }
OpCount activation_op(const Shape& input) { return {numel(input), 0}; }

OpCount elementwise_op(const Shape& a, const Shape& b) {
  // DeepSpeed aligns the shapes from the front and takes the larger size per dimension.
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = std::max(i < a.size() ? a[i] : 1, i < b.size() ? b[i] : 1);
  return {numel(out), 0};
}

OpCount attention_op(const Shape& q, const Shape& k, const Shape& v) {
  if (k.size() < 2) throw std::invalid_argument("attention: k needs at least two dimensions");
  const double kv_len = static_cast<double>(k[k.size() - 2]);
  const Shape q_rows(q.begin(), q.end() - (q.empty() ? 0 : 1));
  const double macs = numel(q) * kv_len + numel(q_rows) * kv_len * last(v, "attention");
  return {2 * macs, macs};
}

OpCount embedding_op() { return {}; }
OpCount dropout_op() { return {}; }

ModuleProfile leaf_module(const std::string& name, const std::string& type, const std::string& extra_repr,
                          std::int64_t params, const OpCount& op) {
  ModuleProfile m;
  m.name = name;
  m.type = type;
  m.extra_repr = extra_repr;
  m.params = params;
  m.add(op);
  return m;
}

ModuleProfile linear_module(const std::string& name, const Shape& input, std::int64_t out, bool bias) {
  const std::int64_t in = static_cast<std::int64_t>(last(input, "Linear"));
  return leaf_module(name, "Linear",
                     "in_features=" + std::to_string(in) + ", out_features=" + std::to_string(out) +
                         ", bias=" + bool_text(bias),
                     in * out + (bias ? out : 0), linear_op(input, out));
}

ModuleProfile conv1d_module(const std::string& name, const Shape& input, std::int64_t out, bool bias) {
  const std::int64_t in = static_cast<std::int64_t>(last(input, "Conv1D"));
  const Shape flat{static_cast<std::int64_t>(numel(input)) / in, in};
  return leaf_module(name, "Conv1D", "nf=" + std::to_string(out) + ", nx=" + std::to_string(in),
                     in * out + (bias ? out : 0), bias ? addmm_op({out}, flat, {in, out}) : matmul_op(flat, {in, out}));
}

ModuleProfile& ModuleProfile::add(const OpCount& op) {
  flops += op.flops;
  macs += op.macs;
  return *this;
}

std::int64_t total_params(const ModuleProfile& m) {
  std::int64_t total = m.params;
  for (const auto& c : m.children) total += total_params(c);
  return total;
}

double total_flops(const ModuleProfile& m) {
  double total = m.flops;
  for (const auto& c : m.children) total += total_flops(c);
  return total;
}

double total_macs(const ModuleProfile& m) {
  double total = m.macs;
  for (const auto& c : m.children) total += total_macs(c);
  return total;
}

double total_latency_ms(const ModuleProfile& m) {
  // get_module_duration: a module never called itself (ModuleList) takes its children's sum.
  if (m.latency_ms != 0) return m.latency_ms;
  double total = 0;
  for (const auto& c : m.children) total += total_latency_ms(c);
  return total;
}

ModuleProfile gpt2_block_profile(const DecoderBlockShape& s) {
  check_shape(s);
  const std::int64_t d = s.hidden / s.heads, q = s.heads * d, kv = s.kv_heads * d;
  ModuleProfile attn = container("attn", "GPT2Attention",
                                 {conv1d("c_attn", s, s.hidden, q + 2 * kv, s.qkv_bias),
                                  conv1d("c_proj", s, q, s.hidden, s.attn_out_bias)});
  attn.add(sdpa(s));
  ModuleProfile mlp = container("mlp", "GPT2MLP",
                                {conv1d("c_fc", s, s.hidden, s.ffn, s.mlp_bias),
                                 conv1d("c_proj", s, s.ffn, s.hidden, s.mlp_bias)});
  mlp.add(activation_op({s.batch, s.seq, s.ffn}));  // gelu(approximate='tanh') on c_fc's output
  return container("", "GPT2Block", {norm("ln_1", "LayerNorm", s, true), std::move(attn),
                                     norm("ln_2", "LayerNorm", s, true), std::move(mlp)});
}

ModuleProfile llama_block_profile(const DecoderBlockShape& s) {
  check_shape(s);
  const std::int64_t d = s.hidden / s.heads, q = s.heads * d, kv = s.kv_heads * d;
  ModuleProfile attn = container("self_attn", "LlamaAttention",
                                 {linear("q_proj", s, s.hidden, q, s.qkv_bias), linear("k_proj", s, s.hidden, kv, s.qkv_bias),
                                  linear("v_proj", s, s.hidden, kv, s.qkv_bias),
                                  linear("o_proj", s, q, s.hidden, s.attn_out_bias)});
  attn.add(sdpa(s));
  ModuleProfile mlp = container("mlp", "LlamaMLP",
                                {linear("gate_proj", s, s.hidden, s.ffn, s.mlp_bias),
                                 linear("up_proj", s, s.hidden, s.ffn, s.mlp_bias),
                                 linear("down_proj", s, s.ffn, s.hidden, s.mlp_bias)});
  mlp.add(activation_op({s.batch, s.seq, s.ffn}));  // silu on gate_proj's output
  return container("", "LlamaDecoderLayer", {norm("input_layernorm", "LlamaRMSNorm", s, false), std::move(attn),
                                             norm("post_attention_layernorm", "LlamaRMSNorm", s, false), std::move(mlp)});
}

}  // namespace shardscope::profiler
