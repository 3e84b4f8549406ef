// build_model: the one LibTorch part of the model spec, in a file of its own so that the spec's
// parsing and checks (model_spec.cpp) stay in the LibTorch-free library.
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <string>

#include "engine/models/gpt2_model.hpp"
#include "engine/models/llama_model.hpp"
#include "engine/models/mlp_model.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/model_spec.hpp"
#include "estimator/byte_units.hpp"

namespace shardscope::engine {
namespace {

// LibTorch reports a failed allocation as c10::Error whose text carries a C++ backtrace; keep its
// first line and say what the model needs and how to make it fit.
[[noreturn]] void throw_cannot_build(const ModelSpec& spec, const c10::Error& error) {
  const std::string reason = error.what_without_backtrace();
  std::string size;
  if (spec.kind != ModelKind::kMlp) {
    const double params = estimator::count_transformer_params(spec.transformer.shape).total;
    size = " (" + estimator::format_count(params) + " parameters, " +
           estimator::format_bytes(4 * params, estimator::ByteUnit::kGiB) + " of fp32 weights)";
  }
  throw ModelError("cannot build the " + std::string(model_kind_name(spec.kind)) + " model" + size + ": " +
                   reason.substr(0, reason.find('\n')) +
                   "; make it smaller (--layers, --hidden, --vocab or the model config), or use ZeRO stage 3 "
                   "on several ranks so that no rank holds it whole");
}

}  // namespace

std::shared_ptr<TrainableModel> build_model(const ModelSpec& spec, bool init_on_cuda, int cuda_index) {
  validate_model_spec(spec);
  std::shared_ptr<TrainableModel> model;
  const torch::Device gpt2_device = init_on_cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cuda_index))
                                                 : torch::Device(torch::kCPU);
  try {
    switch (spec.kind) {
      case ModelKind::kMlp: model = std::make_shared<MlpModel>(spec.mlp); break;
      case ModelKind::kGpt2: model = std::make_shared<Gpt2Model>(spec.transformer, gpt2_device); break;
      case ModelKind::kLlama: model = std::make_shared<LlamaModel>(spec.transformer); break;
    }
  } catch (const c10::Error& error) {
    throw_cannot_build(spec, error);
  }
  model->set_activation_checkpointing(spec.activation_checkpointing);
  return model;
}

}  // namespace shardscope::engine
