#pragma once
// The interface the engine trains: a torch::nn::Module that computes its own loss from a Batch,
// names its parameters as Hugging Face does, and lists its layers in forward order so that a
// ZeRO-3 gatherer can gather each layer's parameters just before it runs (LayerHooks).

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "engine/models/batch.hpp"

namespace shardscope::engine {

/// One entry of TrainableModel::layers(): a module whose own parameters (recursively) are used
/// together by one step of the forward pass.
struct ModelLayer {
  std::string name;  ///< its parameters' name prefix, e.g. "transformer.h.3"
  std::shared_ptr<torch::nn::Module> module;
};

/// Called by a model around each layer it runs; the engine's stage 3 installs one to gather a
/// layer's parameters before its forward and to hook its output's gradient for the backward.
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  /// Before layer `index` of layers() runs its forward.
  virtual void before_forward(std::size_t index) = 0;
  /// With the layer's output; returns the tensor the model continues with (it may be the same
  /// tensor, or one that carries a backward hook).
  virtual torch::Tensor after_forward(std::size_t index, torch::Tensor output) = 0;
};

using LayerFunction = std::function<torch::Tensor(const torch::Tensor&)>;

class TrainableModel : public torch::nn::Module {
 public:
  /// Forward plus loss for one micro-batch: mean cross-entropy over next tokens, or mean squared
  /// error for the MLP, computed in fp32.
  virtual torch::Tensor loss(const Batch& batch) = 0;
  /// The model's output for `inputs`: logits [B, T, vocab] or predictions [B, out].
  virtual torch::Tensor forward(const torch::Tensor& inputs) = 0;
  /// The layers in the order forward() runs them. A module may appear twice: a tied lm_head is
  /// listed as the embedding module again at the end, because it uses the embedding's weight.
  virtual std::vector<ModelLayer> layers() = 0;
  /// "mlp", "gpt2" or "llama".
  virtual std::string kind() const = 0;
  /// The prefix Hugging Face's base model (GPT2Model, LlamaModel) leaves out of its names:
  /// "transformer." or "model."; the weight loader accepts names with or without it.
  virtual std::string base_model_prefix() const { return {}; }
  /// Weights Hugging Face's state_dict holds under a second name: a tied lm_head is
  /// {"lm_head.weight", "transformer.wte.weight"}. Checkpoints write them as DeepSpeed's
  /// shared_params and put the alias in `module`, as DeepSpeed's state_dict() has it.
  virtual std::vector<std::pair<std::string, std::string>> tied_weights() const { return {}; }

  /// Recompute each transformer block in backward instead of keeping its activations.
  void set_activation_checkpointing(bool enabled) { activation_checkpointing_ = enabled; }
  /// Whether blocks are recomputed in backward.
  bool activation_checkpointing() const { return activation_checkpointing_; }
  /// Installs (or, with nullptr, removes) the hooks called around each layer.
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) { hooks_ = std::move(hooks); }

 protected:
  /// A constructor calls this right after building each entry of layers(): under a
  /// PartitionedInit scope (zero.Init) the layer's parameters are partitioned and released at once.
  void layer_built(torch::nn::Module& layer);
  /// Runs layer `index` of layers() as `fn(input)` between the hooks; with activation
  /// checkpointing on, in grad mode and `checkpointable`, through checkpointed_call.
  /// `module` is that layer's module (whose parameters a recomputation differentiates).
  torch::Tensor run_layer(std::size_t index, torch::nn::Module& module, const torch::Tensor& input,
                          const LayerFunction& fn, bool checkpointable);

 private:
  bool activation_checkpointing_ = false;
  std::shared_ptr<LayerHooks> hooks_;
};

/// Runs `fn(input)` without recording its graph, keeping only `input`; backward runs `fn` again
/// with grad enabled (under the autocast state of the forward) and returns the gradients of
/// `input` and of `parameters` (the tensors `fn` uses that need gradients). The C++ frontend has
/// no torch.utils.checkpoint, hence this custom autograd function. `fn` must be deterministic:
/// the built-in models have no dropout.
torch::Tensor checkpointed_call(const LayerFunction& fn, const torch::Tensor& input,
                                const std::vector<torch::Tensor>& parameters);

}  // namespace shardscope::engine
