#include "sessions/smoothing.hpp"

#include <algorithm>
#include <cmath>

#include "sessions/errors.hpp"

namespace shardscope::sessions {
namespace {

// TensorBoard (vz_line_chart2): last = last * w + (1 - w) * y, divided by 1 - w^n where n counts
// the finite points so far, so the first points are not pulled towards the zero start.
std::vector<double> ema(const std::vector<double>& y, double w) {
  std::vector<double> out(y.size());
  double last = 0;
  int count = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    last = last * w + (1 - w) * y[i];
    ++count;
    const double debias = w == 1 ? 1 : 1 - std::pow(w, count);
    out[i] = debias > 0 ? last / debias : y[i];
  }
  return out;
}

// W&B's TWEMA: the weight is sqrt(slider) (capped at 0.999) raised to the x distance from the
// previous point, measured in 1/viewport_scale of the series' x range; sparse and dense series
// of the same shape therefore smooth alike.
std::vector<double> twema(const std::vector<double>& x, const std::vector<double>& y, const Smoothing& s) {
  const double w = std::min(std::sqrt(s.weight), 0.999);
  double x_min = 0, x_max = 0;
  if (!x.empty()) {
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    x_min = *lo;
    x_max = *hi;
  }
  const double range = x_max > x_min ? x_max - x_min : 1;
  std::vector<double> out(y.size());
  double last = 0, debias = 0;
  std::size_t previous = 0;
  bool any = false;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    const double dx = any ? (x[i] - x[previous]) / range * s.viewport_scale : 0;
    const double adjusted = std::pow(w, dx);
    last = last * adjusted + y[i];
    debias = debias * adjusted + 1;
    out[i] = last / debias;
    previous = i;
    any = true;
  }
  return out;
}

std::vector<double> running_average(const std::vector<double>& y, int window) {
  std::vector<double> out(y.size());
  const auto half_before = static_cast<std::ptrdiff_t>((window - 1) / 2);
  const auto half_after = static_cast<std::ptrdiff_t>(window / 2);
  const auto n = static_cast<std::ptrdiff_t>(y.size());
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    if (!std::isfinite(y[static_cast<std::size_t>(i)])) {
      out[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(i)];
      continue;
    }
    double sum = 0;
    int count = 0;
    for (std::ptrdiff_t j = std::max<std::ptrdiff_t>(0, i - half_before); j <= std::min(n - 1, i + half_after); ++j)
      if (std::isfinite(y[static_cast<std::size_t>(j)])) {
        sum += y[static_cast<std::size_t>(j)];
        ++count;
      }
    out[static_cast<std::size_t>(i)] = sum / count;
  }
  return out;
}

}  // namespace

std::vector<double> smooth(const std::vector<double>& x, const std::vector<double>& y, const Smoothing& s) {
  if (x.size() != y.size())
    throw SessionsError(ErrorKind::kInvalidArgument, "smoothing: x has " + std::to_string(x.size()) +
                                                         " points but y has " + std::to_string(y.size()));
  if (!(s.weight >= 0 && s.weight < 1))
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "smoothing weight " + std::to_string(s.weight) + " is outside [0, 1)");
  switch (s.kind) {
    case SmoothingKind::kNone: return y;
    case SmoothingKind::kEma: return ema(y, s.weight);
    case SmoothingKind::kTimeWeightedEma: return twema(x, y, s);
    case SmoothingKind::kRunningAverage:
      if (s.window < 1)
        throw SessionsError(ErrorKind::kInvalidArgument, "running-average window must be at least 1 point");
      return running_average(y, s.window);
  }
  return y;
}

const char* smoothing_kind_name(SmoothingKind kind) {
  switch (kind) {
    case SmoothingKind::kNone: return "none";
    case SmoothingKind::kEma: return "ema";
    case SmoothingKind::kTimeWeightedEma: return "twema";
    case SmoothingKind::kRunningAverage: return "running";
  }
  return "none";
}

SmoothingKind smoothing_kind_from_name(const std::string& name) {
  for (auto kind : {SmoothingKind::kNone, SmoothingKind::kEma, SmoothingKind::kTimeWeightedEma,
                    SmoothingKind::kRunningAverage})
    if (name == smoothing_kind_name(kind)) return kind;
  throw SessionsError(ErrorKind::kInvalidArgument,
                      "unknown smoothing '" + name + "' (one of: none, ema, twema, running)");
}

}  // namespace shardscope::sessions
