#include "engine/loss_scaler.hpp"

#include <algorithm>
#include <cmath>

namespace shardscope::engine {
namespace {

std::string scale_text(double scale) { return std::to_string(static_cast<long long>(scale)); }

}  // namespace

LossScaler::LossScaler(const LossScalerOptions& options)
    : options_(options), dynamic_(options.static_scale == 0) {
  if (dynamic_) {
    if (options.loss_scale_window <= 0)
      throw std::invalid_argument("fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled");
    if (options.min_loss_scale <= 0)
      throw std::invalid_argument("fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled");
    state_.cur_scale = std::ldexp(1.0, options.initial_scale_power);
  } else {
    state_.cur_scale = options.static_scale;
  }
  state_.cur_hysteresis = std::max(1, options.hysteresis);
}

std::optional<std::string> LossScaler::update(bool overflow, int rank) {
  const std::string prefix = "[deepspeed] OVERFLOW! Rank " + std::to_string(rank) + " Skipping step.";
  if (!dynamic_) {
    // A static scale never changes, but the step is still skipped, as FP16_Optimizer does.
    ++state_.cur_iter;
    if (overflow) return prefix + " Attempted loss scale: " + scale_text(state_.cur_scale);
    return std::nullopt;
  }
  std::optional<std::string> message;
  const int delayed_shift = std::max(1, options_.hysteresis);
  if (overflow) {
    if (delayed_shift == 1 || state_.cur_hysteresis == 1) {
      if (state_.cur_scale == options_.min_loss_scale)
        throw LossScaleAtMinimum(
            "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.");
      const double next = std::max(state_.cur_scale / 2.0, options_.min_loss_scale);
      message = prefix + " Attempted loss scale: " + scale_text(state_.cur_scale) + ", reducing to " +
                scale_text(next);
      state_.cur_scale = next;
    } else {
      message = prefix + " Attempted loss scale: " + scale_text(state_.cur_scale) +
                ", but hysteresis is " + std::to_string(state_.cur_hysteresis) +
                ". Reducing hysteresis to " + std::to_string(state_.cur_hysteresis - 1);
      --state_.cur_hysteresis;
    }
    state_.last_overflow_iter = state_.cur_iter;
  } else {
    if (options_.consecutive_hysteresis) state_.cur_hysteresis = delayed_shift;
    if ((state_.cur_iter - state_.last_overflow_iter) % options_.loss_scale_window == 0) {
      if (!options_.consecutive_hysteresis) state_.cur_hysteresis = delayed_shift;
      state_.cur_scale *= 2.0;
    }
  }
  ++state_.cur_iter;
  return message;
}

}  // namespace shardscope::engine
