#pragma once
// A GPT-2-style decoder with Hugging Face's GPT2LMHeadModel parameter names and layouts:
// learned positions, LayerNorm with bias, fused qkv and all projections as Conv1D (weights
// stored [in, out], as HF stores them), GELU (tanh) MLP, tied lm_head, causal attention through
// scaled_dot_product_attention. No dropout (see docs/models.md).

#include <memory>
#include <vector>

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "engine/models/model_spec.hpp"
#include "engine/models/trainable_model.hpp"

namespace shardscope::engine {

class Gpt2Block;

class Gpt2Model : public TrainableModel {
 public:
  /// Builds and initialises the model on `init_device` (its generator draws the weights); throws
  /// ModelError for a shape GPT-2 cannot take.
  explicit Gpt2Model(const TransformerOptions& options, torch::Device init_device = torch::kCPU);

  torch::Tensor loss(const Batch& batch) override;
  torch::Tensor forward(const torch::Tensor& input_ids) override;
  std::vector<ModelLayer> layers() override;
  std::string kind() const override { return "gpt2"; }
  std::string base_model_prefix() const override { return "transformer."; }

 private:
  TransformerOptions options_;
  std::shared_ptr<torch::nn::Module> transformer_;
  torch::nn::Embedding wte_{nullptr};
  torch::nn::Embedding wpe_{nullptr};
  std::vector<std::shared_ptr<Gpt2Block>> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  ///< null when tied to wte
};

}  // namespace shardscope::engine
