#include "engine/models/trainable_model.hpp"

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include "engine/zero/partitioned_init.hpp"

namespace shardscope::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What backward needs to recompute a block: the function, the parameters to differentiate, and
// the autocast state of the forward (torch.utils.checkpoint restores it the same way).
struct RecomputeState : torch::CustomClassHolder {
  LayerFunction fn;
  std::vector<torch::Tensor> parameters;
  c10::DeviceType device_type = c10::kCPU;
  bool autocast_enabled = false;
  c10::ScalarType autocast_dtype = c10::kFloat;
};

// Restores an autocast state for the scope of a recomputation.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType type, bool enabled, c10::ScalarType dtype)
      : type_(type), enabled_(at::autocast::is_autocast_enabled(type)),
        dtype_(at::autocast::get_autocast_dtype(type)) {
    at::autocast::set_autocast_enabled(type, enabled);
    at::autocast::set_autocast_dtype(type, dtype);
  }
  ~AutocastScope() {
    at::autocast::set_autocast_enabled(type_, enabled_);
    at::autocast::set_autocast_dtype(type_, dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType type_;
  bool enabled_;
  c10::ScalarType dtype_;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, at::TensorList parameters,
                               const c10::intrusive_ptr<RecomputeState>& state) {
    (void)parameters;  // inputs only so that autograd routes their gradients through backward
    ctx->save_for_backward({input});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    torch::NoGradGuard no_grad;
    return state->fn(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto state = c10::static_intrusive_pointer_cast<RecomputeState>(ctx->saved_data["state"].toCapsule());
    const torch::Tensor saved = ctx->get_saved_variables()[0];
    const torch::Tensor input = saved.detach().requires_grad_(saved.requires_grad());
    torch::Tensor output;
    {
      torch::AutoGradMode grad_mode(true);
      AutocastScope autocast(state->device_type, state->autocast_enabled, state->autocast_dtype);
      output = state->fn(input);
    }
    // Differentiate only what needs a gradient; the others get an undefined gradient.
    std::vector<torch::Tensor> wrt;
    if (input.requires_grad()) wrt.push_back(input);
    for (const auto& p : state->parameters)
      if (p.requires_grad()) wrt.push_back(p);
    std::vector<torch::Tensor> grads;
    if (!wrt.empty())
      grads = torch::autograd::grad({output}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    variable_list result;
    std::size_t next = 0;
    result.push_back(input.requires_grad() ? grads[next++] : torch::Tensor());
    for (const auto& p : state->parameters) result.push_back(p.requires_grad() ? grads[next++] : torch::Tensor());
    result.emplace_back();  // the state
    return result;
  }
};

}  // namespace

torch::Tensor checkpointed_call(const LayerFunction& fn, const torch::Tensor& input,
                                const std::vector<torch::Tensor>& parameters) {
  auto state = c10::make_intrusive<RecomputeState>();
  state->fn = fn;
  state->parameters = parameters;
  state->device_type = input.device().type();
  state->autocast_enabled = at::autocast::is_autocast_enabled(state->device_type);
  state->autocast_dtype = at::autocast::get_autocast_dtype(state->device_type);
  return CheckpointFunction::apply(input, at::TensorList(state->parameters), state);
}

void TrainableModel::layer_built(torch::nn::Module& layer) {
  if (auto* init = PartitionedInit::current()) init->partition_layer(layer);
}

torch::Tensor TrainableModel::run_layer(std::size_t index, torch::nn::Module& module, const torch::Tensor& input,
                                        const LayerFunction& fn, bool checkpointable) {
  if (hooks_) hooks_->before_forward(index);
  torch::Tensor output;
  if (checkpointable && activation_checkpointing_ && torch::GradMode::is_enabled()) {
    output = checkpointed_call(fn, input, module.parameters());
  } else {
    output = fn(input);
  }
  return hooks_ ? hooks_->after_forward(index, std::move(output)) : output;
}

}  // namespace shardscope::engine
