#pragma once
// The regression MLP of DeepSpeed's first steps: Linear layers with ReLU between them, trained
// with mean squared error on (x, y) batches. Parameters are named "layers.<i>.weight/bias".

#include <vector>

#include <torch/nn/modules/linear.h>

#include "engine/models/model_spec.hpp"
#include "engine/models/trainable_model.hpp"

namespace shardscope::engine {

class MlpModel : public TrainableModel {
 public:
  /// Builds the layers with PyTorch's default nn.Linear initialisation; throws ModelError for a
  /// non-positive dimension.
  explicit MlpModel(const MlpOptions& options);

  torch::Tensor loss(const Batch& batch) override;
  torch::Tensor forward(const torch::Tensor& x) override;
  std::vector<ModelLayer> layers() override;
  std::string kind() const override { return "mlp"; }

 private:
  std::vector<torch::nn::Linear> linears_;
};

}  // namespace shardscope::engine
