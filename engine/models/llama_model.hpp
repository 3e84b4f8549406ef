#pragma once
// A Llama-style decoder with Hugging Face's LlamaForCausalLM parameter names: RMSNorm, rotary
// embeddings (rope_theta, HF's rotate_half convention), SwiGLU MLP, grouped-query attention with
// num_key_value_heads, untied or tied lm_head. The shape's optional flags cover Mistral and
// Qwen2/Qwen3 (q/k/v biases, per-head q/k RMSNorm).

#include <memory>
#include <vector>

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "engine/models/model_spec.hpp"
#include "engine/models/trainable_model.hpp"

namespace shardscope::engine {

class LlamaBlock;
class RmsNorm;

class LlamaModel : public TrainableModel {
 public:
  /// Builds and initialises the model; throws ModelError for a shape it cannot take.
  explicit LlamaModel(const TransformerOptions& options);

  torch::Tensor loss(const Batch& batch) override;
  torch::Tensor forward(const torch::Tensor& input_ids) override;
  std::vector<ModelLayer> layers() override;
  std::string kind() const override { return "llama"; }
  std::string base_model_prefix() const override { return "model."; }
  std::vector<std::pair<std::string, std::string>> tied_weights() const override {
    if (lm_head_) return {};
    return {{"lm_head.weight", "model.embed_tokens.weight"}};
  }

 private:
  TransformerOptions options_;
  std::shared_ptr<torch::nn::Module> model_;
  torch::nn::Embedding embed_tokens_{nullptr};
  std::vector<std::shared_ptr<LlamaBlock>> blocks_;
  std::shared_ptr<RmsNorm> norm_;
  torch::nn::Linear lm_head_{nullptr};  ///< null when tied to embed_tokens
};

}  // namespace shardscope::engine
