// Engine::step() and its gradient arithmetic: at the accumulation boundary the reduced gradients
// are unscaled (loss scale and world size), their global norm decides the fp16/bf16 overflow skip
// and the clip coefficient, and the shard optimizer steps them wherever the placement keeps the
// state. Host pieces (offload) are scaled in place by the CPU kernels; device pieces are scaled
// by the optimizer kernels as they read them.
#include <chrono>
#include <cmath>

#include "engine/engine.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/cpu_norm.hpp"
#include "profiler/nvtx_ranges.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::engine {
namespace {

using sessions::ms_since;

}  // namespace

double Engine::unscaled_squared_norm(const GradientPieces& pieces) {
  // The reduced gradients are sums over ranks: dividing by the world size averages them, as
  // DeepSpeed's postscale_gradients does, in the same pass as the loss-scale division.
  const double inv_scale = 1.0 / ((scaler_ ? scaler_->scale() : 1.0) * options_.world_size);
  double squares = 0;
  std::vector<torch::Tensor> device_pieces;
  for (const auto& piece : pieces) {
    if (!piece.grads.is_cpu()) {
      device_pieces.push_back(piece.grads);
      continue;
    }
    // Host pieces (offload): the CPU kernels unscale in place and sum the squares.
    float* g = piece.grads.data_ptr<float>();
    const auto n = static_cast<std::size_t>(piece.grads.numel());
    if (inv_scale != 1.0) kernels::cpu_scale(g, n, static_cast<float>(inv_scale));
    squares += kernels::cpu_squared_l2_norm(g, n);
  }
  if (!device_pieces.empty()) {
    // One reduction serves both: a non-finite value anywhere makes the norm non-finite, and the
    // norm is what clipping needs. No temporary the size of the gradients; one wait on the GPU.
    torch::NoGradGuard no_grad;
    const auto norms = at::_foreach_norm(device_pieces, 2, torch::kFloat32);
    const double norm = torch::stack(norms).norm().item<double>();
    squares += norm * norm * inv_scale * inv_scale;
  }
  device_unscale_ = inv_scale;  // applied to the device pieces together with the clip coefficient
  // Each rank saw only its shard: the sum of the shards' squares (padding is zero) is the global
  // norm, and a non-finite one skips the step on every rank alike.
  if (runtime_->sharded() && options_.world_size > 1) squares = communicator()->all_reduce_scalar(squares, ReduceOp::kSum);
  return squares;
}

double Engine::clip_gradients(const GradientPieces& pieces, double squares) {
  const double norm = std::sqrt(squares);
  const double clip = config_.gradient_clipping;
  const double coefficient = clip > 0 ? std::min(1.0, kernels::clip_coefficient(norm, clip)) : 1.0;
  bool on_device = false;
  for (const auto& piece : pieces) {
    if (!piece.grads.is_cpu())
      on_device = true;
    else if (coefficient < 1.0)
      kernels::cpu_scale(piece.grads.data_ptr<float>(), static_cast<std::size_t>(piece.grads.numel()),
                         static_cast<float>(coefficient));
  }
  // The device kernels multiply each gradient by this factor as they read it (fp32), so the
  // unscale and the clip cost no pass over the device gradients.
  device_grad_scale_ = on_device ? static_cast<float>(device_unscale_ * coefficient) : 1.0f;
  return norm;
}

StepOutcome Engine::step() {
  StepOutcome outcome;
  outcome.loss_scale = loss_scale();
  outcome.lr = scheduler_->current_lr();
  const bool boundary = is_gradient_accumulation_boundary();
  ++micro_steps_;
  if (!boundary) return outcome;
  if (no_sync_depth_ > 0)
    throw std::logic_error("step() at a gradient accumulation boundary inside no_sync(): DeepSpeed "
                           "disallows it; leave the no_sync() scope before the boundary step");
  enter_engine_phase(communicator(), options_.rank, global_steps_ + 1, CollectivePhase::kOptimizer);
  const profiler::ScopedRange range(profiler::NvtxPhase::kOptimizerStep);
  timer_start(profiler::timer_names::kStep);
  const auto start = std::chrono::steady_clock::now();
  outcome.boundary = true;
  const GradientPieces grads = runtime_->gradient_pieces();
  // Offload: the boundary backward copied the offloaded range's gradients to the host; the CPU reads them next.
  if (optimizer_->reads_host_gradients() && options_.device.is_cuda()) torch::cuda::synchronize(options_.device.index());
  const double squares = unscaled_squared_norm(grads);
  const auto precision = config_.precision();
  const bool check = precision == configs::PrecisionMode::kFp16 ||
                     (precision == configs::PrecisionMode::kBf16 && config_.bf16.check_grad_overflow);
  const bool overflow = check && !std::isfinite(squares);
  if (overflow) {
    outcome.skipped = true;
    ++skipped_steps_;
    outcome.overflow_message = scaler_ ? scaler_->update(true, options_.rank)
                                       : std::optional<std::string>("[deepspeed] OVERFLOW! Rank " +
                                                                    std::to_string(options_.rank) +
                                                                    " Skipping step.");
    if (outcome.overflow_message) log(*outcome.overflow_message);
  } else {
    outcome.grad_norm = clip_gradients(grads, squares);
    optimizer_->step(grads, outcome.lr, scheduler_->current_momentum(), scheduler_->beta2(), device_grad_scale_);
    runtime_->after_optimizer_step(optimizer_->writes_model_weights());
    scheduler_->step();
    if (scaler_) scaler_->update(false, options_.rank);
  }
  zero_grad();
  ++global_steps_;
  global_samples_ += train_batch_size();
  if (auto* comm = communicator()) {
    comm->report_progress(global_steps_);
    comm->set_phase(CollectivePhase::kData);  // until the next forward: the data loader's time
  }
  timer_stop(profiler::timer_names::kStep);
  current_times_.step_ms += ms_since(start);
  last_times_ = current_times_;
  if (timers_) {
    // GPU time between CUDA events (read once per step: the only wait on the device).
    last_times_.forward_ms = timers_->operator()(profiler::timer_names::kForward).elapsed_ms(true);
    last_times_.backward_ms = timers_->operator()(profiler::timer_names::kBackward).elapsed_ms(true);
    last_times_.backward_inner_ms = timers_->operator()(profiler::timer_names::kBackwardInner).elapsed_ms(true);
    last_times_.backward_allreduce_ms = timers_->operator()(profiler::timer_names::kBackwardReduce).elapsed_ms(true);
    last_times_.step_ms = timers_->operator()(profiler::timer_names::kStep).elapsed_ms(true);
  }
  current_times_ = {};
  memory_report("Engine after step");
  return outcome;
}

}  // namespace shardscope::engine
