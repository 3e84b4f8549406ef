#pragma once
// DeepSpeed's fp16 loss scaling (runtime/fp16/loss_scaler.py): a static scale, or the dynamic
// scaler with hysteresis. Every rank runs the same scaler on the same (all-reduced) overflow flag,
// so the decision agrees across ranks without extra communication.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace shardscope::engine {

struct LossScalerOptions {
  double static_scale = 0;      ///< fp16.loss_scale; 0 = dynamic
  int initial_scale_power = 16;  ///< initial dynamic scale 2^power
  int loss_scale_window = 1000;
  int hysteresis = 2;            ///< DeepSpeed's delayed_shift
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1;
};

/// Thrown when an overflow happens at the minimum scale, as DeepSpeed raises.
class LossScaleAtMinimum : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LossScalerState {
  double cur_scale = 1;
  std::int64_t cur_iter = 0;
  std::int64_t last_overflow_iter = -1;
  int cur_hysteresis = 1;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options);

  bool dynamic() const { return dynamic_; }
  double scale() const { return state_.cur_scale; }

  /// Updates after a boundary step. Returns the log line DeepSpeed prints for an overflow
  /// ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: ..."), or nullopt.
  /// Throws LossScaleAtMinimum when an overflow happens at min_loss_scale.
  std::optional<std::string> update(bool overflow, int rank = 0);

  const LossScalerState& state() const { return state_; }
  void load_state(const LossScalerState& state) { state_ = state; }

 private:
  LossScalerOptions options_;
  bool dynamic_;
  LossScalerState state_;
};

}  // namespace shardscope::engine
