#pragma once
// The summary lane of a many-rank profile: for the ranks without lanes of their own, how busy each
// was in kernels and in NCCL collectives over each time bucket, reduced across them to the min,
// median and max busy fraction (with the ranks at the min and the max). A straggler reads as a
// bucket whose min kernel-busy drops while the others' collective-busy rises (they wait in NCCL
// for it), and the bucket names it. Each rank's activity is merged once into disjoint busy
// intervals with a running total, so a bucket's busy time is two binary searches: a paint costs
// buckets x ranks x log(records), bounded by pixels, not by the record count. Qt-free.

#include <cstdint>
#include <cstddef>
#include <vector>

namespace shardscope::gui {

/// Disjoint busy intervals of one rank, by start, with the busy time before each.
struct BusyIntervals {
  std::vector<std::int64_t> starts, ends, busy_before;
  /// Adds the union of [start, end) intervals (any order, overlapping allowed).
  static BusyIntervals merge(std::vector<std::pair<std::int64_t, std::int64_t>> spans);
  /// Busy ns in [a, b).
  std::int64_t busy_ns(std::int64_t a, std::int64_t b) const;
  /// Busy ns in (-inf, t).
  std::int64_t busy_until(std::int64_t t) const;
  bool empty() const { return starts.empty(); }
};

/// One rank's activity: kernels (compute, memcpy, memset) and NCCL collectives, each merged.
struct RankBusy {
  int rank = 0;
  BusyIntervals kernels;
  BusyIntervals collectives;
};

/// Min, median and max of the busy fraction across ranks, per bucket.
struct BusyBand {
  std::vector<double> min, median, max;  ///< 0..1
  std::vector<int> min_rank, max_rank;   ///< the rank at the min and the max (lowest id on a tie)
  /// The rank of bucket `b` farthest from its median: the max's when it lies farther above than the
  /// min lies below, else the min's; -1 where every rank is alike (or there are none). A straggler is the one rank busy
  /// in kernels while the rest wait (the max of the kernels band) and the one not waiting in NCCL
  /// (the min of the collectives band).
  int outlier(std::size_t b) const;
};

struct BusySummary {
  std::int64_t start_ns = 0, bucket_ns = 1;
  int ranks = 0;  ///< how many ranks the bands reduce
  BusyBand kernels, collectives;
};

/// Reduces `ranks` over `buckets` buckets of [start_ns, end_ns).
BusySummary summarize_busy(const std::vector<const RankBusy*>& ranks, std::int64_t start_ns, std::int64_t end_ns,
                           int buckets);

}  // namespace shardscope::gui
