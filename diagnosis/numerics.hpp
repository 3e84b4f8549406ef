#pragma once
// Numerics findings from a run's steps: a NaN or Inf loss, an fp16 overflow streak (DeepSpeed's
// dynamic loss scaler halving on every overflow, down to min_loss_scale), and a loss spike (a
// robust z-score against the recent window, so one earlier spike does not hide the next).

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

/// Findings of `steps` (any order, any ranks: a step's loss is the mean over the ranks that
/// report it), in step order: kinds "nan_loss", "inf_loss", "overflow_streak", "loss_spike".
std::vector<sessions::Finding> find_numerics(const std::vector<sessions::StepMetrics>& steps,
                                             const NumericsOptions& options = {});

}  // namespace shardscope::diagnosis
