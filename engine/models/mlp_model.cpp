#include "engine/models/mlp_model.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/container/modulelist.h>

#include "engine/models/model_error.hpp"

namespace shardscope::engine {

MlpModel::MlpModel(const MlpOptions& options) {
  std::vector<std::int64_t> dims = {options.input_dim};
  dims.insert(dims.end(), options.hidden_dims.begin(), options.hidden_dims.end());
  dims.push_back(options.output_dim);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] <= 0)
      throw ModelError("mlp model: dimension " + std::to_string(i) + " (" + std::to_string(dims[i]) +
                       ") must be positive; give input, hidden and output sizes above zero");
  torch::nn::ModuleList list;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
    linears_.emplace_back(dims[i], dims[i + 1]);
    list->push_back(linears_.back());
  }
  register_module("layers", list);
  for (auto& linear : linears_) layer_built(*linear);
}

std::vector<ModelLayer> MlpModel::layers() {
  std::vector<ModelLayer> list;
  for (std::size_t i = 0; i < linears_.size(); ++i) list.push_back({"layers." + std::to_string(i), linears_[i].ptr()});
  return list;
}

torch::Tensor MlpModel::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.size(1) == linears_.front()->options.in_features(), "mlp model: inputs must be [batch, ",
              linears_.front()->options.in_features(), "], got ", x.sizes());
  torch::Tensor h = x;
  for (std::size_t i = 0; i < linears_.size(); ++i) {
    const auto linear = linears_[i].ptr();
    h = run_layer(i, *linear, h, [linear](const torch::Tensor& in) { return linear->forward(in); }, false);
    if (i + 1 < linears_.size()) h = torch::relu(h);
  }
  return h;
}

torch::Tensor MlpModel::loss(const Batch& batch) {
  return torch::nn::functional::mse_loss(forward(batch.inputs).to(torch::kFloat), batch.targets.to(torch::kFloat));
}

}  // namespace shardscope::engine
