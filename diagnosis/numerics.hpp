#pragma once
// Numerics findings from a run's steps: a NaN or Inf loss, an fp16 overflow streak (DeepSpeed's
// dynamic loss scaler halving on every overflow, down to min_loss_scale), and a loss spike (a
// robust z-score against the recent window, so one earlier spike does not hide the next).

#include <cstdint>
#include <optional>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct NumericsOptions {
  int overflow_streak = 5;       ///< consecutive skipped steps that make a finding
  double min_loss_scale = 1;     ///< DeepSpeed's fp16.min_loss_scale (its default is 1)
  int spike_window = 50;         ///< steps of history a spike is measured against
  int spike_min_history = 20;    ///< no spike is called with fewer steps of history
  double spike_z = 6;            ///< robust z-score (median, scaled MAD) above which a loss is a spike
};

/// One step over every rank that reported it: all the numerics rules read of a step.
struct StepNumerics {
  std::int64_t step = 0;
  std::vector<int> nonfinite_ranks;   ///< ascending
  bool any_inf_only = true;           ///< every non-finite loss is ±Inf (none NaN)
  std::optional<double> mean_loss;    ///< over the ranks with a finite loss
  bool skipped = false;               ///< any rank skipped it (an fp16 overflow)
  std::optional<double> loss_scale;   ///< the smallest the ranks reported
};

/// `steps` (any order, any ranks) folded into one StepNumerics per step, in step order.
std::vector<StepNumerics> step_numerics(const std::vector<sessions::StepMetrics>& steps);

/// Findings of `steps` (any order, any ranks: a step's loss is the mean over the ranks that
/// report it), in step order: kinds "nan_loss", "inf_loss", "overflow_streak", "loss_spike".
std::vector<sessions::Finding> find_numerics(const std::vector<sessions::StepMetrics>& steps,
                                             const NumericsOptions& options = {});
/// The same findings of steps already folded (in step order), as a stored session's
/// pre-aggregates give them without reading every rank's row.
std::vector<sessions::Finding> find_numerics(const std::vector<StepNumerics>& steps,
                                             const NumericsOptions& options = {});

}  // namespace shardscope::diagnosis
