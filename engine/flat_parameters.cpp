#include "engine/flat_parameters.hpp"

#include <unordered_set>

#include "engine/zero/partition_layout.hpp"
#include "engine/zero/partitioned_init.hpp"

namespace shardscope::engine {

std::vector<ParameterSlot> FlatParameters::collect_slots(torch::nn::Module& module) {
  std::vector<ParameterSlot> slots;
  // A tied weight is registered under two names; it is one parameter and takes one slot.
  std::unordered_set<const void*> seen;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    ParameterSlot slot;
    slot.name = item.key();
    slot.param = p;
    // A parameter released by PartitionedInit is empty; its true shape is in the registry.
    slot.shape = partitioned_shape(p).value_or(p.sizes().vec());
    slot.numel = 1;
    for (auto d : slot.shape) slot.numel *= d;
    slots.push_back(std::move(slot));
  }
  TORCH_CHECK(!slots.empty(), "the model has no trainable parameters");
  return slots;
}

FlatParameters::FlatParameters(std::vector<ParameterSlot> slots, const PartitionLayout& layout, torch::Dtype dtype,
                               torch::Device device, bool with_grads)
    : slots_(std::move(slots)), numel_(layout.numel()) {
  TORCH_CHECK(slots_.size() == layout.slot_count(), "FlatParameters: the layout has ", layout.slot_count(),
              " parameters, the model ", slots_.size());
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  params_ = torch::zeros({layout.padded_numel()}, options);
  if (with_grads) grads_ = torch::zeros({layout.padded_numel()}, options);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto& slot = slots_[i];
    slot.offset = layout.slot_offset(static_cast<int>(i));
    torch::Tensor view = params_.narrow(0, slot.offset, slot.numel).view(slot.shape);
    view.copy_(slot.param.detach());
    slot.param.set_data(view);
  }
  bind_grads();
}

void FlatParameters::zero_grads() {
  if (grads_.defined()) grads_.zero_();
}

torch::Tensor FlatParameters::grad_view(std::size_t slot) const {
  const auto& s = slots_.at(slot);
  return grads_.narrow(0, s.offset, s.numel).view(s.shape);
}

void FlatParameters::bind_grads() {
  if (!grads_.defined()) return;
  for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].param.mutable_grad() = grad_view(i);
}

}  // namespace shardscope::engine
