#pragma once
// A set of half-open time intervals [start, end) in nanoseconds, merged on demand, for "time with
// something running" questions (union and intersection lengths): the profile analyses and the
// profiled window's summaries (activity_stats.hpp).

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardscope::sessions {

class IntervalSet {
 public:
  /// Adds [start, end); empty or reversed intervals are ignored.
  void add(std::int64_t start, std::int64_t end) {
    if (end <= start) return;
    spans_.emplace_back(start, end);
    merged_ = false;
  }
  bool empty() const { return spans_.empty(); }
  /// Length of the union.
  std::int64_t measure() const {
    merge();
    std::int64_t total = 0;
    for (const auto& [s, e] : spans_) total += e - s;
    return total;
  }
  /// Length of the union of this set intersected with the union of `other` (two-pointer sweep).
  std::int64_t intersection_measure(const IntervalSet& other) const {
    merge();
    other.merge();
    std::int64_t total = 0;
    std::size_t i = 0, j = 0;
    while (i < spans_.size() && j < other.spans_.size()) {
      const auto lo = std::max(spans_[i].first, other.spans_[j].first);
      const auto hi = std::min(spans_[i].second, other.spans_[j].second);
      if (hi > lo) total += hi - lo;
      if (spans_[i].second < other.spans_[j].second) ++i; else ++j;
    }
    return total;
  }
  /// Start of the earliest interval (0 when empty).
  std::int64_t lowest() const { return merge(), spans_.empty() ? 0 : spans_.front().first; }
  /// End of the latest interval (0 when empty).
  std::int64_t highest() const { return merge(), spans_.empty() ? 0 : spans_.back().second; }

 private:
  void merge() const {
    if (merged_) return;
    std::sort(spans_.begin(), spans_.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& span : spans_) {
      if (!out.empty() && span.first <= out.back().second) out.back().second = std::max(out.back().second, span.second);
      else out.push_back(span);
    }
    spans_ = std::move(out);
    merged_ = true;
  }
  mutable std::vector<std::pair<std::int64_t, std::int64_t>> spans_;
  mutable bool merged_ = true;
};

}  // namespace shardscope::sessions
