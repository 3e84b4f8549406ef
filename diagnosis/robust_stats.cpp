#include "diagnosis/robust_stats.hpp"

#include <algorithm>
#include <cmath>

namespace shardscope::diagnosis {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double scaled_mad(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double m = median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - m));
  return 1.4826 * median(std::move(deviations));
}

}  // namespace shardscope::diagnosis
