#include "app/gui/common/series_downsampling.hpp"

#include <algorithm>
#include <cmath>

namespace shardscope::gui {
namespace {

Series without_nan(const Series& in) {
  Series out;
  out.x.reserve(in.x.size());
  out.y.reserve(in.y.size());
  for (std::size_t i = 0; i < in.x.size() && i < in.y.size(); ++i)
    if (!std::isnan(in.y[i]) && !std::isnan(in.x[i])) {
      out.x.push_back(in.x[i]);
      out.y.push_back(in.y[i]);
    }
  return out;
}

void keep(const Series& in, std::size_t i, Series& out) {
  out.x.push_back(in.x[i]);
  out.y.push_back(in.y[i]);
}

}  // namespace

Series downsample_min_max(const Series& raw, std::size_t buckets) {
  Series in = without_nan(raw);
  if (buckets == 0 || in.x.size() <= 4 * buckets) return in;
  Series out;
  const double x0 = in.x.front();
  const double width = (in.x.back() - x0) / static_cast<double>(buckets);
  std::size_t i = 0;
  while (i < in.x.size()) {
    // The bucket of point i; points of one bucket are contiguous because x increases.
    const auto b = width > 0 ? std::min(buckets - 1, static_cast<std::size_t>((in.x[i] - x0) / width)) : 0;
    std::size_t end = i;
    std::size_t lo = i, hi = i;
    while (end < in.x.size() &&
           (width > 0 ? std::min(buckets - 1, static_cast<std::size_t>((in.x[end] - x0) / width)) : 0) == b) {
      if (in.y[end] < in.y[lo]) lo = end;
      if (in.y[end] > in.y[hi]) hi = end;
      ++end;
    }
    std::size_t picks[4] = {i, std::min(lo, hi), std::max(lo, hi), end - 1};
    std::size_t last = static_cast<std::size_t>(-1);
    for (std::size_t p : picks)
      if (p != last) {
        keep(in, p, out);
        last = p;
      }
    i = end;
  }
  return out;
}

Series downsample_lttb(const Series& raw, std::size_t threshold) {
  Series in = without_nan(raw);
  const std::size_t n = in.x.size();
  if (threshold < 3 || n <= threshold) return in;
  Series out;
  keep(in, 0, out);
  // Buckets cover points 1 .. n-2; the first and last points are fixed.
  const double every = static_cast<double>(n - 2) / static_cast<double>(threshold - 2);
  std::size_t a = 0;
  for (std::size_t b = 0; b < threshold - 2; ++b) {
    const auto start = static_cast<std::size_t>(std::floor(b * every)) + 1;
    const auto end = std::min(n - 1, static_cast<std::size_t>(std::floor((b + 1) * every)) + 1);
    // The next bucket's average is the third corner of the triangle.
    const auto next_start = end;
    const auto next_end = std::min(n, static_cast<std::size_t>(std::floor((b + 2) * every)) + 1);
    double avg_x = 0, avg_y = 0;
    for (std::size_t j = next_start; j < next_end; ++j) {
      avg_x += in.x[j];
      avg_y += in.y[j];
    }
    const auto count = static_cast<double>(std::max<std::size_t>(1, next_end - next_start));
    avg_x /= count;
    avg_y /= count;
    if (next_end <= next_start) {
      avg_x = in.x[n - 1];
      avg_y = in.y[n - 1];
    }
    double best_area = -1;
    std::size_t best = start;
    for (std::size_t j = start; j < end; ++j) {
      const double area = std::fabs((in.x[a] - avg_x) * (in.y[j] - in.y[a]) - (in.x[a] - in.x[j]) * (avg_y - in.y[a]));
      if (area > best_area) {
        best_area = area;
        best = j;
      }
    }
    keep(in, best, out);
    a = best;
  }
  keep(in, n - 1, out);
  return out;
}

}  // namespace shardscope::gui
