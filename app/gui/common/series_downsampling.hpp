#pragma once
// Downsampling a curve for drawing: a plot of 100k steps x 8 sessions cannot draw every point and
// stay responsive, and does not need to, since a screen has ~2,000 pixel columns. Two methods:
// min/max per bucket keeps every spike (the loss blow-up a user looks for), LTTB (Steinarsson's
// Largest-Triangle-Three-Buckets) keeps the visual shape with one point per bucket.

#include <cstddef>
#include <vector>

namespace shardscope::gui {

struct Series {
  std::vector<double> x;  ///< increasing
  std::vector<double> y;
};

/// Splits the x range into `buckets` equal intervals and keeps, per interval, its first and last
/// point and the points holding its minimum and maximum (in x order, each once). Series with at
/// most 4 x buckets points are returned unchanged. NaN values are dropped.
Series downsample_min_max(const Series& in, std::size_t buckets);

/// LTTB to `threshold` points (>= 3): first and last kept, one point per bucket chosen to span
/// the largest triangle with its neighbours. Series with at most `threshold` points are unchanged.
Series downsample_lttb(const Series& in, std::size_t threshold);

}  // namespace shardscope::gui
