#pragma once
// Median and median absolute deviation: the doctor's yardsticks, since one bad step must not move them.

#include <vector>

namespace shardscope::diagnosis {

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);
/// The median absolute deviation from the median, scaled by 1.4826 so that it estimates the
/// standard deviation of normal data; 0 for fewer than two values.
double scaled_mad(const std::vector<double>& values);

}  // namespace shardscope::diagnosis
