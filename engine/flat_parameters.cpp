#include "engine/flat_parameters.hpp"

#include <unordered_set>

namespace shardscope::engine {

FlatParameters::FlatParameters(torch::nn::Module& module, torch::Dtype dtype, torch::Device device,
                               std::int64_t pad_to) {
  TORCH_CHECK(pad_to >= 1, "FlatParameters: pad_to must be >= 1, got ", pad_to);
  // A tied weight is registered under two names; it is one parameter and takes one slot.
  std::unordered_set<const void*> seen;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    ParameterSlot slot;
    slot.name = item.key();
    slot.param = p;
    slot.offset = numel_;
    slot.numel = p.numel();
    slot.shape = p.sizes().vec();
    numel_ += slot.numel;
    slots_.push_back(std::move(slot));
  }
  TORCH_CHECK(!slots_.empty(), "the model has no trainable parameters");
  const std::int64_t padded = (numel_ + pad_to - 1) / pad_to * pad_to;
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  params_ = torch::zeros({padded}, options);
  grads_ = torch::zeros({padded}, options);
  torch::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    torch::Tensor view = params_.narrow(0, slot.offset, slot.numel).view(slot.shape);
    view.copy_(slot.param.detach());
    slot.param.set_data(view);
  }
  bind_grads();
}

void FlatParameters::zero_grads() { grads_.zero_(); }

void FlatParameters::bind_grads() {
  for (auto& slot : slots_)
    slot.param.mutable_grad() = grads_.narrow(0, slot.offset, slot.numel).view(slot.shape);
}

}  // namespace shardscope::engine
