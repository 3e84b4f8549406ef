#pragma once
// The optimizer of the engine: DeepSpeed's optimizers (Adam/AdamW, Lamb, Lion, Adagrad, and
// torch's SGD) applied to a flat fp32 master buffer by the kernels of kernels/, with the state
// (moments, sums, momentum) in flat fp32 buffers of the same length. The master may be the
// model's own buffer (fp32 training) or a copy whose update is written back to the model's
// 16-bit buffer by the kernel in the same pass.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "configs/config_model.hpp"
#include "engine/flat_parameters.hpp"
#include "kernels/flat_params.hpp"

namespace shardscope::engine {

enum class OptimizerAlgorithm { kAdam, kAdamW, kLamb, kLion, kAdagrad, kSgd };

struct OptimizerSettings {
  OptimizerAlgorithm algorithm = OptimizerAlgorithm::kAdamW;
  std::string type_name = "AdamW";  ///< as the config wrote it
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool bias_correction = true;
  double max_coeff = 10.0, min_coeff = 0.01;      ///< Lamb
  double lr_decay = 0.0, initial_accumulator_value = 0.0;  ///< Adagrad
  double momentum = 0.0, dampening = 0.0;          ///< SGD
  bool nesterov = false;
};

/// Reads the config's optimizer block; throws std::invalid_argument naming the type or key when
/// the engine cannot run it (Muon, 1-bit optimizers, an unknown torch optimizer).
OptimizerSettings optimizer_settings_from_config(const configs::OptimizerConfig& config);

/// Segments the optimizer treats as separate tensors (Lamb's trust ratio is per tensor).
struct TensorSegment {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
};

class FlatOptimizer {
 public:
  /// `master` is the fp32 buffer updated in place; `model_copy` (undefined for fp32 training) the
  /// 16-bit buffer the update is written to; `segments` the tensors (only Lamb needs them).
  FlatOptimizer(const OptimizerSettings& settings, torch::Tensor master, torch::Tensor model_copy,
                std::vector<TensorSegment> segments);

  /// How step() computes: the fused kernels of kernels/ (the default), or plain tensor operations
  /// (any device; the tests' independent reference).
  enum class Backend { kKernels, kTensorOps };
  void set_backend(Backend backend) { backend_ = backend; }

  /// One optimizer step with learning rate `lr` (and beta1 when a schedule cycles momentum) from
  /// `grads`, pieces that together cover the master (fp32, or bf16/fp16 read as they are); a Lamb
  /// segment must lie inside one piece. Every gradient is multiplied by `grad_scale` (in fp32) as
  /// it is read: the engine's unscale and clip coefficient, with no pass of their own.
  void step(const GradientPieces& grads, double lr, std::optional<double> beta1 = std::nullopt,
            std::optional<double> beta2 = std::nullopt, float grad_scale = 1.0f);

  std::int64_t step_count() const { return step_count_; }
  const OptimizerSettings& settings() const { return settings_; }
  /// The state buffers by name ("exp_avg", "exp_avg_sq", "sum", "momentum_buffer").
  const std::map<std::string, torch::Tensor>& state() const { return state_; }
  /// Bytes held by the optimizer state (for the memory report and the ZeRO-1 check).
  std::int64_t state_bytes() const;
  /// Restores buffers saved from state() (same names, same lengths) and the step count.
  void load_state(const std::map<std::string, torch::Tensor>& state, std::int64_t step_count);

 private:
  void step_kernels(const GradientPieces& grads, double lr, double beta1, double beta2);
  void step_torch(const GradientPieces& grads, double lr, double beta1, double beta2);
  float grad_scale_ = 1.0f;  ///< the current step's gradient factor (see step())
  /// Whether kernels/ has this buffer's device (CPU always; CUDA when built with it).
  bool kernels_available() const;
  /// The kernels' view of master elements `segment`, whose gradients are in `piece`.
  kernels::FlatParams flat_view(const TensorSegment& segment, const GradientPiece& piece) const;
  /// The piece holding all of `segment`; throws when none does.
  const GradientPiece& piece_of(const GradientPieces& grads, const TensorSegment& segment) const;

  OptimizerSettings settings_;
  torch::Tensor master_, model_copy_;
  std::vector<TensorSegment> segments_;
  std::map<std::string, torch::Tensor> state_;
  std::int64_t step_count_ = 0;
  Backend backend_ = Backend::kKernels;
  torch::Tensor lamb_workspace_;  ///< the CUDA Lamb kernel's reduction scratch
};

const char* optimizer_algorithm_name(OptimizerAlgorithm algorithm);

}  // namespace shardscope::engine
