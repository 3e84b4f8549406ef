#include "engine/models/gpt2_model.hpp"

#include <cmath>

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/container/modulelist.h>

#include "engine/models/chunked_cross_entropy.hpp"
#include "engine/models/fused_layer_norm.hpp"

namespace shardscope::engine {
namespace F = torch::nn::functional;

// HF's Conv1D: y = x W + b with W stored [in, out] (the transpose of nn.Linear).
class Conv1D : public torch::nn::Module {
 public:
  Conv1D(std::int64_t in, std::int64_t out, bool bias, double init_std, const torch::TensorOptions& on) {
    weight_ = register_parameter("weight", torch::randn({in, out}, on) * init_std);
    if (bias) bias_ = register_parameter("bias", torch::zeros({out}, on));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto sizes = x.sizes().vec();
    sizes.back() = weight_.size(1);
    const auto flat = x.reshape({-1, weight_.size(0)});
    const auto y = bias_.defined() ? torch::addmm(bias_, flat, weight_) : flat.mm(weight_);
    return y.view(sizes);
  }

 private:
  torch::Tensor weight_;
  torch::Tensor bias_;
};

// HF's GPT2Attention (attn.c_attn, attn.c_proj); with kv heads < heads, grouped-query.
class Gpt2Attention : public torch::nn::Module {
 public:
  Gpt2Attention(const estimator::TransformerShape& s, double init_std, double proj_std, const torch::TensorOptions& on)
      : heads_(s.heads), kv_heads_(s.effective_kv_heads()), head_dim_(s.effective_head_dim()) {
    const auto q = heads_ * head_dim_, kv = kv_heads_ * head_dim_;
    c_attn_ = register_module("c_attn", std::make_shared<Conv1D>(s.hidden, q + 2 * kv, s.qkv_bias, init_std, on));
    c_proj_ = register_module("c_proj", std::make_shared<Conv1D>(q, s.hidden, s.attn_out_bias, proj_std, on));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto b = x.size(0), t = x.size(1);
    const auto qkv = c_attn_->forward(x).split({heads_ * head_dim_, kv_heads_ * head_dim_, kv_heads_ * head_dim_}, -1);
    const auto q = qkv[0].view({b, t, heads_, head_dim_}).transpose(1, 2);
    const auto k = qkv[1].view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
    const auto v = qkv[2].view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
    const auto y = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                                    /*enable_gqa=*/kv_heads_ != heads_);
    return c_proj_->forward(y.transpose(1, 2).reshape({b, t, heads_ * head_dim_}));
  }

 private:
  std::int64_t heads_, kv_heads_, head_dim_;
  std::shared_ptr<Conv1D> c_attn_, c_proj_;
};

// HF's GPT2MLP (mlp.c_fc, mlp.c_proj) with gelu_new, the tanh approximation.
class Gpt2Mlp : public torch::nn::Module {
 public:
  Gpt2Mlp(const estimator::TransformerShape& s, double init_std, double proj_std, const torch::TensorOptions& on) {
    c_fc_ = register_module("c_fc", std::make_shared<Conv1D>(s.hidden, s.effective_ffn(), s.mlp_bias, init_std, on));
    c_proj_ = register_module("c_proj",
                              std::make_shared<Conv1D>(s.effective_ffn(), s.hidden, s.mlp_bias, proj_std, on));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return c_proj_->forward(F::gelu(c_fc_->forward(x), F::GELUFuncOptions().approximate("tanh")));
  }

 private:
  std::shared_ptr<Conv1D> c_fc_, c_proj_;
};

// One pre-norm block: x + attn(ln_1(x)), then + mlp(ln_2(x)).
class Gpt2Block : public torch::nn::Module {
 public:
  Gpt2Block(const TransformerOptions& o, double proj_std, const torch::TensorOptions& on) {
    const auto norm = torch::nn::LayerNormOptions({o.shape.hidden}).eps(o.norm_eps);
    ln_1_ = register_module("ln_1", torch::nn::LayerNorm(norm));
    attn_ = register_module("attn", std::make_shared<Gpt2Attention>(o.shape, o.initializer_range, proj_std, on));
    ln_2_ = register_module("ln_2", torch::nn::LayerNorm(norm));
    mlp_ = register_module("mlp", std::make_shared<Gpt2Mlp>(o.shape, o.initializer_range, proj_std, on));
    ln_1_->to(on.device());
    ln_2_->to(on.device());
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto h = x + attn_->forward(layer_norm(x, ln_1_));
    return h + mlp_->forward(layer_norm(h, ln_2_));
  }

 private:
  torch::nn::LayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  std::shared_ptr<Gpt2Attention> attn_;
  std::shared_ptr<Gpt2Mlp> mlp_;
};

Gpt2Model::Gpt2Model(const TransformerOptions& options, torch::Device init_device) : options_(options) {
  const auto& s = options_.shape;
  validate_transformer_options(ModelKind::kGpt2, options_);
  const double init_std = options_.initializer_range;
  // GPT-2 scales the residual projections by 1/sqrt(2 x layers) (HF's _init_weights).
  const double proj_std = init_std / std::sqrt(2.0 * static_cast<double>(s.layers));
  const auto positions = s.max_positions > 0 ? s.max_positions : s.seq_len;
  // Drawn where the weights will live: 1.3B normal samples take seconds on one CPU thread.
  const auto on = torch::TensorOptions().device(init_device);
  const auto embedding = [&](std::int64_t rows) {
    return torch::nn::Embedding(torch::nn::EmbeddingOptions(rows, s.hidden)._weight(torch::empty({rows, s.hidden}, on)));
  };
  transformer_ = register_module("transformer", std::make_shared<torch::nn::Module>());
  wte_ = transformer_->register_module("wte", embedding(s.vocab));
  wpe_ = transformer_->register_module("wpe", embedding(positions));
  torch::NoGradGuard no_grad;
  wte_->weight.normal_(0.0, init_std);
  wpe_->weight.normal_(0.0, init_std);
  layer_built(*wte_);
  layer_built(*wpe_);
  torch::nn::ModuleList h;
  for (long long i = 0; i < s.layers; ++i) {
    blocks_.push_back(std::make_shared<Gpt2Block>(options_, proj_std, on));
    h->push_back(blocks_.back());
    layer_built(*blocks_.back());
  }
  transformer_->register_module("h", h);
  ln_f_ = transformer_->register_module(
      "ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.hidden}).eps(options_.norm_eps)));
  ln_f_->to(init_device);
  layer_built(*ln_f_);
  if (!s.tied_embeddings) {
    lm_head_ = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(s.hidden, s.vocab).bias(false)));
    lm_head_->to(init_device);
    lm_head_->weight.normal_(0.0, init_std);
    layer_built(*lm_head_);
  }
}

std::vector<ModelLayer> Gpt2Model::layers() {
  std::vector<ModelLayer> list = {{"transformer.wte", wte_.ptr()}, {"transformer.wpe", wpe_.ptr()}};
  for (std::size_t i = 0; i < blocks_.size(); ++i) list.push_back({"transformer.h." + std::to_string(i), blocks_[i]});
  list.push_back({"transformer.ln_f", ln_f_.ptr()});
  if (lm_head_)
    list.push_back({"lm_head", lm_head_.ptr()});
  else
    list.push_back({"transformer.wte", wte_.ptr()});  // the tied head multiplies by wte's weight
  return list;
}

torch::Tensor Gpt2Model::forward(const torch::Tensor& input_ids) {
  TORCH_CHECK(input_ids.dim() == 2, "gpt2 model: input ids must be [batch, seq], got ", input_ids.sizes());
  const auto t = input_ids.size(1);
  // From the options, not wpe's weight: under ZeRO stage 3 it is empty until gathered.
  const auto positions_count = options_.shape.max_positions > 0 ? options_.shape.max_positions : options_.shape.seq_len;
  TORCH_CHECK(t <= positions_count, "gpt2 model: sequence of ", t, " tokens exceeds the ", positions_count,
              " learned positions (n_positions)");
  std::size_t index = 0;
  auto x = run_layer(index++, *wte_, input_ids, [&](const torch::Tensor& ids) { return wte_->forward(ids); }, false);
  const auto positions = torch::arange(t, input_ids.options().dtype(torch::kLong));
  x = x + run_layer(index++, *wpe_, positions, [&](const torch::Tensor& p) { return wpe_->forward(p); }, false);
  for (const auto& block : blocks_)
    x = run_layer(index++, *block, x, [block](const torch::Tensor& in) { return block->forward(in); }, true);
  x = run_layer(index++, *ln_f_, x, [&](const torch::Tensor& in) { return layer_norm(in, ln_f_); }, false);
  if (lm_head_) return run_layer(index, *lm_head_, x, [&](const torch::Tensor& in) { return lm_head_->forward(in); }, false);
  return run_layer(index, *wte_, x, [&](const torch::Tensor& in) { return F::linear(in, wte_->weight); }, false);
}

torch::Tensor Gpt2Model::loss(const Batch& batch) {
  const auto logits = forward(batch.inputs);
  return cross_entropy_loss(logits.flatten(0, 1), batch.targets.flatten(), kOwnedLogits);
}

}  // namespace shardscope::engine
