#include "app/gui/profile/profile_rank_summary.hpp"

#include <algorithm>

namespace shardscope::gui {
namespace {

struct Sample {
  double fraction;
  int rank;
};

void reduce_bucket(std::vector<Sample>& samples, BusyBand& band) {
  if (samples.empty()) {
    for (auto* v : {&band.min, &band.median, &band.max}) v->push_back(0);
    band.min_rank.push_back(-1), band.max_rank.push_back(-1);
    return;
  }
  // Ties go to the lowest rank, so the name on hover does not flicker between equal ranks.
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.fraction != b.fraction ? a.fraction < b.fraction : a.rank < b.rank; });
  const std::size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2].fraction : (samples[n / 2 - 1].fraction + samples[n / 2].fraction) / 2;
  auto top = std::find_if(samples.begin(), samples.end(), [&](const Sample& s) { return s.fraction == samples.back().fraction; });
  band.min.push_back(samples.front().fraction);
  band.median.push_back(median);
  band.max.push_back(samples.back().fraction);
  band.min_rank.push_back(samples.front().rank);
  band.max_rank.push_back(top->rank);
}

}  // namespace

int BusyBand::outlier(std::size_t b) const {
  if (max[b] == min[b]) return -1;  // every rank alike: nobody stands out
  return max[b] - median[b] > median[b] - min[b] ? max_rank[b] : min_rank[b];
}

BusyIntervals BusyIntervals::merge(std::vector<std::pair<std::int64_t, std::int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  BusyIntervals out;
  std::int64_t total = 0;
  for (const auto& [a, b] : spans) {
    if (b <= a) continue;
    if (!out.ends.empty() && a <= out.ends.back()) {
      const std::int64_t grown = std::max(out.ends.back(), b);
      total += grown - out.ends.back();
      out.ends.back() = grown;
      continue;
    }
    out.starts.push_back(a);
    out.ends.push_back(b);
    out.busy_before.push_back(total);
    total += b - a;
  }
  return out;
}

std::int64_t BusyIntervals::busy_until(std::int64_t t) const {
  const auto it = std::upper_bound(starts.begin(), starts.end(), t);
  if (it == starts.begin()) return 0;
  const auto i = static_cast<std::size_t>(it - starts.begin()) - 1;
  return busy_before[i] + std::min(t, ends[i]) - starts[i];
}

std::int64_t BusyIntervals::busy_ns(std::int64_t a, std::int64_t b) const {
  return b > a ? busy_until(b) - busy_until(a) : 0;
}

BusySummary summarize_busy(const std::vector<const RankBusy*>& ranks, std::int64_t start_ns, std::int64_t end_ns,
                           int buckets) {
  BusySummary out;
  buckets = std::max(1, buckets);
  out.start_ns = start_ns;
  out.bucket_ns = std::max<std::int64_t>(1, (end_ns - start_ns + buckets - 1) / buckets);
  out.ranks = static_cast<int>(ranks.size());
  std::vector<Sample> kernels, collectives;
  for (int b = 0; b < buckets; ++b) {
    const std::int64_t a = start_ns + b * out.bucket_ns, z = a + out.bucket_ns;
    kernels.clear(), collectives.clear();
    for (const RankBusy* r : ranks) {
      kernels.push_back({double(r->kernels.busy_ns(a, z)) / double(out.bucket_ns), r->rank});
      collectives.push_back({double(r->collectives.busy_ns(a, z)) / double(out.bucket_ns), r->rank});
    }
    reduce_bucket(kernels, out.kernels);
    reduce_bucket(collectives, out.collectives);
  }
  return out;
}

}  // namespace shardscope::gui
