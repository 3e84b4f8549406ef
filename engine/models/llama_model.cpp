#include "engine/models/llama_model.hpp"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/container/modulelist.h>

#include "engine/models/chunked_cross_entropy.hpp"

namespace shardscope::engine {
namespace F = torch::nn::functional;

// HF's LlamaRMSNorm: normalise in fp32, cast back, then scale.
class RmsNorm : public torch::nn::Module {
 public:
  RmsNorm(std::int64_t dim, double eps) : eps_(eps) { weight_ = register_parameter("weight", torch::ones({dim})); }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto h = x.to(torch::kFloat);
    const auto normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
    return weight_ * normed.to(x.scalar_type());
  }

 private:
  double eps_;
  torch::Tensor weight_;
};

namespace {

torch::nn::Linear make_linear(std::int64_t in, std::int64_t out, bool bias, double init_std) {
  torch::nn::Linear linear(torch::nn::LinearOptions(in, out).bias(bias));
  torch::NoGradGuard no_grad;
  linear->weight.normal_(0.0, init_std);
  if (bias) linear->bias.zero_();
  return linear;
}

// HF's rotate_half: (x1, x2) -> (-x2, x1) over the two halves of the head dimension.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

}  // namespace

// cos and sin of the rotary angles for positions 0..T-1, [T, head_dim], in fp32.
struct Rotary {
  torch::Tensor cos, sin;
};

class LlamaAttention : public torch::nn::Module {
 public:
  LlamaAttention(const TransformerOptions& o)
      : heads_(o.shape.heads), kv_heads_(o.shape.effective_kv_heads()), head_dim_(o.shape.effective_head_dim()) {
    const auto& s = o.shape;
    const double init_std = o.initializer_range;
    q_proj_ = register_module("q_proj", make_linear(s.hidden, heads_ * head_dim_, s.qkv_bias, init_std));
    k_proj_ = register_module("k_proj", make_linear(s.hidden, kv_heads_ * head_dim_, s.qkv_bias, init_std));
    v_proj_ = register_module("v_proj", make_linear(s.hidden, kv_heads_ * head_dim_, s.qkv_bias, init_std));
    o_proj_ = register_module("o_proj", make_linear(heads_ * head_dim_, s.hidden, s.attn_out_bias, init_std));
    if (s.qk_norm) {  // qwen3: RMSNorm over each head's q and k before the rotation
      q_norm_ = register_module("q_norm", std::make_shared<RmsNorm>(head_dim_, o.norm_eps));
      k_norm_ = register_module("k_norm", std::make_shared<RmsNorm>(head_dim_, o.norm_eps));
    }
  }
  torch::Tensor forward(const torch::Tensor& x, const Rotary& rope) {
    const auto b = x.size(0), t = x.size(1);
    auto q = q_proj_->forward(x).view({b, t, heads_, head_dim_});
    auto k = k_proj_->forward(x).view({b, t, kv_heads_, head_dim_});
    const auto v = v_proj_->forward(x).view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
    if (q_norm_) {
      q = q_norm_->forward(q);
      k = k_norm_->forward(k);
    }
    q = q.transpose(1, 2);
    k = k.transpose(1, 2);
    const auto cos = rope.cos.to(q.scalar_type()), sin = rope.sin.to(q.scalar_type());
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
    const auto y = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                                    /*enable_gqa=*/kv_heads_ != heads_);
    return o_proj_->forward(y.transpose(1, 2).reshape({b, t, heads_ * head_dim_}));
  }

 private:
  std::int64_t heads_, kv_heads_, head_dim_;
  torch::nn::Linear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr}, o_proj_{nullptr};
  std::shared_ptr<RmsNorm> q_norm_, k_norm_;
};

// SwiGLU: down(silu(gate(x)) * up(x)).
class LlamaMlp : public torch::nn::Module {
 public:
  explicit LlamaMlp(const TransformerOptions& o) {
    const auto& s = o.shape;
    gate_proj_ = register_module("gate_proj", make_linear(s.hidden, s.effective_ffn(), s.mlp_bias, o.initializer_range));
    up_proj_ = register_module("up_proj", make_linear(s.hidden, s.effective_ffn(), s.mlp_bias, o.initializer_range));
    down_proj_ = register_module("down_proj", make_linear(s.effective_ffn(), s.hidden, s.mlp_bias, o.initializer_range));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return down_proj_->forward(F::silu(gate_proj_->forward(x)) * up_proj_->forward(x));
  }

 private:
  torch::nn::Linear gate_proj_{nullptr}, up_proj_{nullptr}, down_proj_{nullptr};
};

class LlamaBlock : public torch::nn::Module {
 public:
  explicit LlamaBlock(const TransformerOptions& o) {
    input_layernorm_ = register_module("input_layernorm", std::make_shared<RmsNorm>(o.shape.hidden, o.norm_eps));
    self_attn_ = register_module("self_attn", std::make_shared<LlamaAttention>(o));
    post_attention_layernorm_ =
        register_module("post_attention_layernorm", std::make_shared<RmsNorm>(o.shape.hidden, o.norm_eps));
    mlp_ = register_module("mlp", std::make_shared<LlamaMlp>(o));
  }
  torch::Tensor forward(const torch::Tensor& x, const Rotary& rope) {
    const auto h = x + self_attn_->forward(input_layernorm_->forward(x), rope);
    return h + mlp_->forward(post_attention_layernorm_->forward(h));
  }

 private:
  std::shared_ptr<RmsNorm> input_layernorm_, post_attention_layernorm_;
  std::shared_ptr<LlamaAttention> self_attn_;
  std::shared_ptr<LlamaMlp> mlp_;
};

LlamaModel::LlamaModel(const TransformerOptions& options) : options_(options) {
  validate_transformer_options(ModelKind::kLlama, options_);
  const auto& s = options_.shape;
  model_ = register_module("model", std::make_shared<torch::nn::Module>());
  embed_tokens_ = model_->register_module("embed_tokens", torch::nn::Embedding(s.vocab, s.hidden));
  {
    torch::NoGradGuard no_grad;
    embed_tokens_->weight.normal_(0.0, options_.initializer_range);
  }
  layer_built(*embed_tokens_);
  torch::nn::ModuleList layers;
  for (long long i = 0; i < s.layers; ++i) {
    blocks_.push_back(std::make_shared<LlamaBlock>(options_));
    layers->push_back(blocks_.back());
    layer_built(*blocks_.back());
  }
  model_->register_module("layers", layers);
  norm_ = model_->register_module("norm", std::make_shared<RmsNorm>(s.hidden, options_.norm_eps));
  layer_built(*norm_);
  if (!s.tied_embeddings) {
    lm_head_ = register_module("lm_head", make_linear(s.hidden, s.vocab, false, options_.initializer_range));
    layer_built(*lm_head_);
  }
}

std::vector<ModelLayer> LlamaModel::layers() {
  std::vector<ModelLayer> list = {{"model.embed_tokens", embed_tokens_.ptr()}};
  for (std::size_t i = 0; i < blocks_.size(); ++i) list.push_back({"model.layers." + std::to_string(i), blocks_[i]});
  list.push_back({"model.norm", norm_});
  if (lm_head_)
    list.push_back({"lm_head", lm_head_.ptr()});
  else
    list.push_back({"model.embed_tokens", embed_tokens_.ptr()});  // the tied head uses its weight
  return list;
}

torch::Tensor LlamaModel::forward(const torch::Tensor& input_ids) {
  TORCH_CHECK(input_ids.dim() == 2, "llama model: input ids must be [batch, seq], got ", input_ids.sizes());
  const auto t = input_ids.size(1);
  const auto dim = options_.shape.effective_head_dim();
  const auto float_options = torch::TensorOptions().dtype(torch::kFloat).device(input_ids.device());
  // inv_freq = 1 / theta^(2i/d), computed per call: it is tiny and stays out of the state dict.
  const auto inv_freq = 1.0 / torch::pow(options_.rope_theta, torch::arange(0, dim, 2, float_options) / dim);
  const auto angles = torch::outer(torch::arange(t, float_options), inv_freq);
  const auto emb = torch::cat({angles, angles}, -1);
  const Rotary rope{emb.cos(), emb.sin()};

  std::size_t index = 0;
  auto x = run_layer(index++, *embed_tokens_, input_ids,
                     [&](const torch::Tensor& ids) { return embed_tokens_->forward(ids); }, false);
  for (const auto& block : blocks_)
    x = run_layer(index++, *block, x, [block, rope](const torch::Tensor& in) { return block->forward(in, rope); },
                  true);
  x = run_layer(index++, *norm_, x, [&](const torch::Tensor& in) { return norm_->forward(in); }, false);
  if (lm_head_) return run_layer(index, *lm_head_, x, [&](const torch::Tensor& in) { return lm_head_->forward(in); }, false);
  return run_layer(index, *embed_tokens_, x, [&](const torch::Tensor& in) { return F::linear(in, embed_tokens_->weight); },
                   false);
}

torch::Tensor LlamaModel::loss(const Batch& batch) {
  const auto logits = forward(batch.inputs);
  return cross_entropy_loss(logits.flatten(0, 1), batch.targets.flatten(), kOwnedLogits);
}

}  // namespace shardscope::engine
