#include "engine/flat_optimizer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "kernels/cpu_adagrad.hpp"
#include "kernels/cpu_adam.hpp"
#include "kernels/cpu_lamb.hpp"
#include "kernels/cpu_lion.hpp"
#include "kernels/cpu_sgd.hpp"

#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda_adagrad.hpp"
#include "kernels/cuda_adam.hpp"
#include "kernels/cuda_lamb.hpp"
#include "kernels/cuda_lion.hpp"
#include "kernels/cuda_sgd.hpp"
#endif

namespace shardscope::engine {
namespace {

std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

double number_param(const nlohmann::json& params, const char* key, double fallback) {
  if (!params.contains(key)) return fallback;
  const auto& v = params.at(key);
  if (!v.is_number()) throw std::invalid_argument(std::string("optimizer.params.") + key + " must be a number");
  return v.get<double>();
}

kernels::Dtype kernel_dtype(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return kernels::Dtype::kFloat32;
    case torch::kBFloat16: return kernels::Dtype::kBFloat16;
    case torch::kFloat16: return kernels::Dtype::kFloat16;
    default: throw std::invalid_argument("optimizer buffers must be fp32, bf16 or fp16");
  }
}

}  // namespace

const char* optimizer_algorithm_name(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kAdam: return "Adam";
    case OptimizerAlgorithm::kAdamW: return "AdamW";
    case OptimizerAlgorithm::kLamb: return "Lamb";
    case OptimizerAlgorithm::kLion: return "Lion";
    case OptimizerAlgorithm::kAdagrad: return "Adagrad";
    case OptimizerAlgorithm::kSgd: return "SGD";
  }
  return "unknown";
}

OptimizerSettings optimizer_settings_from_config(const configs::OptimizerConfig& c) {
  if (!c.present)
    throw std::invalid_argument(
        "the config has no \"optimizer\" block; add one, e.g. \"optimizer\": {\"type\": \"AdamW\", "
        "\"params\": {\"lr\": 1e-3}}");
  OptimizerSettings s;
  s.type_name = c.type;
  s.lr = c.lr;
  s.beta1 = c.beta1;
  s.beta2 = c.beta2;
  s.eps = c.eps;
  s.weight_decay = c.weight_decay;
  s.bias_correction = c.bias_correction;
  const auto params = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json);
  using K = configs::OptimizerKind;
  switch (c.kind) {
    case K::kAdam:  // DeepSpeed runs "Adam" as AdamW unless adam_w_mode is false
      s.algorithm = c.adam_w_mode ? OptimizerAlgorithm::kAdamW : OptimizerAlgorithm::kAdam;
      break;
    case K::kAdamW: s.algorithm = OptimizerAlgorithm::kAdamW; break;
    case K::kLamb:
      s.algorithm = OptimizerAlgorithm::kLamb;
      s.max_coeff = number_param(params, "max_coeff", 10.0);
      s.min_coeff = number_param(params, "min_coeff", 0.01);
      break;
    case K::kLion: s.algorithm = OptimizerAlgorithm::kLion; break;
    case K::kAdagrad:
      s.algorithm = OptimizerAlgorithm::kAdagrad;
      s.lr = number_param(params, "lr", 1e-2);  // torch.optim.Adagrad's default
      s.eps = number_param(params, "eps", 1e-10);
      s.lr_decay = number_param(params, "lr_decay", 0.0);
      s.initial_accumulator_value = number_param(params, "initial_accumulator_value", 0.0);
      break;
    case K::kTorch:
      if (lowered(c.type) != "sgd")
        throw std::invalid_argument("optimizer \"" + c.type +
                                    "\" is a torch optimizer the engine does not implement; use Adam, "
                                    "AdamW, Lamb, Lion, Adagrad or SGD");
      s.algorithm = OptimizerAlgorithm::kSgd;
      s.momentum = number_param(params, "momentum", 0.0);
      s.dampening = number_param(params, "dampening", 0.0);
      s.nesterov = params.value("nesterov", false);
      break;
    default:
      throw std::invalid_argument("optimizer \"" + c.type +
                                  "\" is not supported by ShardScope's engine; use Adam, AdamW, Lamb, "
                                  "Lion, Adagrad or SGD");
  }
  return s;
}

FlatOptimizer::FlatOptimizer(const OptimizerSettings& settings, torch::Tensor master, torch::Tensor model_copy,
                             std::vector<TensorSegment> segments)
    : settings_(settings), master_(std::move(master)), model_copy_(std::move(model_copy)), segments_(std::move(segments)) {
  TORCH_CHECK(master_.scalar_type() == torch::kFloat32 && master_.is_contiguous(),
              "the optimizer's master buffer must be contiguous fp32");
  const auto zeros = [&] { return torch::zeros_like(master_); };
  switch (settings_.algorithm) {
    case OptimizerAlgorithm::kAdam:
    case OptimizerAlgorithm::kAdamW:
    case OptimizerAlgorithm::kLamb:
      state_["exp_avg"] = zeros();
      state_["exp_avg_sq"] = zeros();
      break;
    case OptimizerAlgorithm::kLion: state_["exp_avg"] = zeros(); break;
    case OptimizerAlgorithm::kAdagrad:
      state_["sum"] = torch::full_like(master_, settings_.initial_accumulator_value);
      break;
    case OptimizerAlgorithm::kSgd:
      if (settings_.momentum > 0) state_["momentum_buffer"] = zeros();
      break;
  }
  if (segments_.empty()) segments_.push_back({0, master_.numel()});
}

bool FlatOptimizer::kernels_available() const {
  if (master_.is_cpu()) return true;
#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
  return master_.is_cuda();
#else
  return false;
#endif
}

std::int64_t FlatOptimizer::state_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& [name, t] : state_) bytes += t.numel() * static_cast<std::int64_t>(t.element_size());
  return bytes;
}

void FlatOptimizer::load_state(const std::map<std::string, torch::Tensor>& state, std::int64_t step_count) {
  for (auto& [name, buffer] : state_) {
    auto it = state.find(name);
    TORCH_CHECK(it != state.end(), "optimizer state '", name, "' is missing from the checkpoint");
    TORCH_CHECK(it->second.numel() == buffer.numel(), "optimizer state '", name, "' has ",
                it->second.numel(), " elements in the checkpoint, expected ", buffer.numel());
    torch::NoGradGuard no_grad;
    buffer.copy_(it->second.reshape({-1}));
  }
  step_count_ = step_count;
}

void FlatOptimizer::step(const GradientPieces& grads, double lr, std::optional<double> beta1,
                         std::optional<double> beta2, float grad_scale) {
  TORCH_CHECK(std::isfinite(grad_scale), "optimizer step: the gradient scale is ", grad_scale,
              "; an overflowed step must be skipped, not stepped");
  grad_scale_ = grad_scale;
  std::int64_t covered = 0;
  for (const auto& piece : grads) {
    TORCH_CHECK(piece.grads.defined() && piece.grads.is_contiguous() && piece.offset >= 0 &&
                    piece.offset + piece.grads.numel() <= master_.numel(),
                "optimizer step: a gradient piece at ", piece.offset, " is undefined, not contiguous or outside the ",
                master_.numel(), "-element master");
    TORCH_CHECK(piece.grads.device() == master_.device(), "optimizer step: gradients on ", piece.grads.device(),
                ", master on ", master_.device());
    covered += piece.grads.numel();
  }
  TORCH_CHECK(covered == master_.numel(), "optimizer step: the gradient pieces cover ", covered, " of ",
              master_.numel(), " elements");
  ++step_count_;
  const double b1 = beta1.value_or(settings_.beta1), b2 = beta2.value_or(settings_.beta2);
  if (backend_ == Backend::kKernels && kernels_available())
    step_kernels(grads, lr, b1, b2);
  else
    step_torch(grads, lr, b1, b2);
}

const GradientPiece& FlatOptimizer::piece_of(const GradientPieces& grads, const TensorSegment& seg) const {
  for (const auto& piece : grads)
    if (seg.offset >= piece.offset && seg.offset + seg.numel <= piece.offset + piece.grads.numel()) return piece;
  TORCH_CHECK(false, "optimizer step: no gradient piece holds the tensor at ", seg.offset, " (", seg.numel,
              " elements) whole");
}

kernels::FlatParams FlatOptimizer::flat_view(const TensorSegment& seg, const GradientPiece& piece) const {
  kernels::FlatParams flat;
  flat.params = master_.data_ptr<float>() + seg.offset;
  const auto& g = piece.grads;
  flat.grads = {static_cast<const char*>(g.data_ptr()) + (seg.offset - piece.offset) * g.element_size(),
                kernel_dtype(g.scalar_type()), grad_scale_};
  if (model_copy_.defined())
    flat.copy = {static_cast<char*>(model_copy_.data_ptr()) + seg.offset * model_copy_.element_size(),
                 kernel_dtype(model_copy_.scalar_type())};
  flat.count = static_cast<std::size_t>(seg.numel);
  return flat;
}

// One call per algorithm and gradient piece; on a CUDA buffer the same options go to the fused
// CUDA kernel on the current stream, on the CPU to the vectorised OpenMP kernel.
void FlatOptimizer::step_kernels(const GradientPieces& grads, double lr, double beta1, double beta2) {
  const auto state_at = [this](const char* name, std::int64_t offset) -> float* {
    auto it = state_.find(name);
    return it == state_.end() ? nullptr : it->second.data_ptr<float>() + offset;
  };
  const auto& s = settings_;
#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
  const bool cuda = master_.is_cuda();
  cudaStream_t stream = cuda ? c10::cuda::getCurrentCUDAStream(master_.device().index()).stream() : nullptr;
#define SHARDSCOPE_OPTIMIZER_CALL(family, ...) \
  (cuda ? kernels::cuda_##family##_step(__VA_ARGS__, stream) : kernels::cpu_##family##_step(__VA_ARGS__))
#else
#define SHARDSCOPE_OPTIMIZER_CALL(family, ...) kernels::cpu_##family##_step(__VA_ARGS__)
#endif
  if (s.algorithm == OptimizerAlgorithm::kLamb) {
    const kernels::LambOptions o{lr, beta1, beta2, s.eps, s.weight_decay, s.max_coeff, s.min_coeff,
                                 s.bias_correction, false};
    for (const auto& seg : segments_) {  // FusedLamb's trust ratio is per parameter tensor
      const kernels::LambState st{state_at("exp_avg", seg.offset), state_at("exp_avg_sq", seg.offset)};
      const kernels::FlatParams view = flat_view(seg, piece_of(grads, seg));
#ifdef SHARDSCOPE_ENGINE_CUDA_KERNELS
      if (cuda) {
        if (!lamb_workspace_.defined())
          lamb_workspace_ = torch::empty({static_cast<std::int64_t>(kernels::cuda_lamb_workspace_doubles())},
                                         master_.options().dtype(torch::kFloat64));
        kernels::cuda_lamb_step(o, view, st, step_count_, lamb_workspace_.data_ptr<double>(), stream);
        continue;
      }
#endif
      kernels::cpu_lamb_step(o, view, st, step_count_);
    }
    return;
  }
  // The other algorithms are elementwise: each piece is stepped on its own.
  for (const auto& piece : grads) {
    const std::int64_t at = piece.offset;
    const kernels::FlatParams view = flat_view({at, piece.grads.numel()}, piece);
    switch (s.algorithm) {
      case OptimizerAlgorithm::kAdam:
      case OptimizerAlgorithm::kAdamW: {
        const kernels::AdamOptions o{lr, beta1, beta2, s.eps, s.weight_decay,
                                     s.algorithm == OptimizerAlgorithm::kAdamW, s.bias_correction};
        SHARDSCOPE_OPTIMIZER_CALL(adam, o, view, kernels::AdamState{state_at("exp_avg", at), state_at("exp_avg_sq", at)},
                                  step_count_);
        break;
      }
      case OptimizerAlgorithm::kLion: {
        const kernels::LionOptions o{lr, beta1, beta2, s.weight_decay};
        SHARDSCOPE_OPTIMIZER_CALL(lion, o, view, kernels::LionState{state_at("exp_avg", at)}, step_count_);
        break;
      }
      case OptimizerAlgorithm::kAdagrad: {
        const kernels::AdagradOptions o{lr, s.lr_decay, s.eps, s.weight_decay};
        SHARDSCOPE_OPTIMIZER_CALL(adagrad, o, view, kernels::AdagradState{state_at("sum", at)}, step_count_);
        break;
      }
      case OptimizerAlgorithm::kSgd: {
        const kernels::SgdOptions o{lr, s.momentum, s.dampening, s.weight_decay, s.nesterov};
        SHARDSCOPE_OPTIMIZER_CALL(sgd, o, view, kernels::SgdState{state_at("momentum_buffer", at)}, step_count_);
        break;
      }
      case OptimizerAlgorithm::kLamb: break;  // above
    }
  }
#undef SHARDSCOPE_OPTIMIZER_CALL
}

}  // namespace shardscope::engine
