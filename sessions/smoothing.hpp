#pragma once
// Curve smoothing as TensorBoard and Weights & Biases users know it (docs/sessions.md, "Smoothing").
// Smoothing never changes stored data; it is applied to curves on the way to a plot or a table.

#include <string>
#include <vector>

namespace shardscope::sessions {

enum class SmoothingKind {
  kNone,
  kEma,              ///< TensorBoard's debiased EMA over point index
  kTimeWeightedEma,  ///< W&B's default TWEMA: debiased, decay scaled by the x distance between points
  kRunningAverage,   ///< centred boxcar of `window` points (W&B's running average)
};

struct Smoothing {
  SmoothingKind kind = SmoothingKind::kNone;
  double weight = 0.6;          ///< 0 (none) .. 0.999; the slider value of TensorBoard and W&B
  int window = 10;              ///< points in the running average
  double viewport_scale = 1000; ///< W&B's VIEWPORT_SCALE: the x range counts as this many units
};

/// Smooths `y` (sampled at increasing `x`); NaN points stay NaN and do not disturb the average.
/// Throws SessionsError(kInvalidArgument) when x and y differ in length or a parameter is out of range.
std::vector<double> smooth(const std::vector<double>& x, const std::vector<double>& y, const Smoothing& smoothing);

/// "none", "ema", "twema", "running".
const char* smoothing_kind_name(SmoothingKind kind);
/// Inverse of smoothing_kind_name; throws SessionsError(kInvalidArgument) listing the names.
SmoothingKind smoothing_kind_from_name(const std::string& name);

}  // namespace shardscope::sessions
