#include "engine/checkpoint_repartition.hpp"

#include <algorithm>

#include "engine/communicator.hpp"

namespace shardscope::engine {
namespace {

using checkpoints::PartitionRun;

constexpr std::int64_t kWindowElements = std::int64_t{1} << 24;  // 64 MiB of fp32 per all-reduce

// Calls fn(run, lo, hi) for the part [lo, hi) of each run that falls into [begin, end).
template <typename Fn>
void for_each_overlap(const std::vector<PartitionRun>& runs, std::int64_t begin, std::int64_t end, Fn&& fn) {
  for (const auto& r : runs) {
    const std::int64_t lo = std::max(begin, r.canonical), hi = std::min(end, r.canonical + r.count);
    if (lo < hi) fn(r, lo, hi);
  }
}

}  // namespace

std::vector<PartitionRun> engine_shard_runs(const PartitionLayout& layout, int rank) {
  std::vector<PartitionRun> runs;
  layout.for_each_owned_run(rank, [&](std::int64_t canonical, std::int64_t shard, std::int64_t count) {
    runs.push_back({canonical, shard, count});
  });
  return runs;
}

torch::Tensor repartition(const std::vector<HeldPart>& held, const std::vector<PartitionRun>& target_runs,
                          std::int64_t target_numel, std::int64_t canonical_numel, Communicator* comm,
                          const torch::Device& device) {
  auto target = torch::zeros({target_numel}, torch::kFloat32);
  float* out = target.data_ptr<float>();
  const bool collective = comm && comm->world_size() > 1;
  for (std::int64_t begin = 0; begin < canonical_numel; begin += kWindowElements) {
    const std::int64_t end = std::min(canonical_numel, begin + kWindowElements);
    auto window = torch::zeros({end - begin}, torch::kFloat32);
    float* w = window.data_ptr<float>();
    for (const auto& part : held)
      for_each_overlap(part.runs, begin, end, [&](const PartitionRun& r, std::int64_t lo, std::int64_t hi) {
        std::copy_n(part.values + r.part + (lo - r.canonical), hi - lo, w + (lo - begin));
      });
    if (collective) {
      auto on_device = window.to(device);
      comm->all_reduce(on_device, ReduceOp::kSum, "checkpoint repartition").wait();
      window = on_device.to(torch::kCPU).contiguous();
      w = window.data_ptr<float>();
    }
    for_each_overlap(target_runs, begin, end, [&](const PartitionRun& r, std::int64_t lo, std::int64_t hi) {
      std::copy_n(w + (lo - begin), hi - lo, out + r.part + (lo - r.canonical));
    });
  }
  return target;
}

std::vector<PartitionRun> remap_runs(const std::vector<PartitionRun>& runs,
                                     const std::vector<checkpoints::ParameterEntry>& parameters,
                                     const std::vector<std::int64_t>& target_offset) {
  std::vector<PartitionRun> out;
  for (const auto& r : runs) {
    std::int64_t at = r.canonical, part = r.part, left = r.count;
    // The parameter holding `at`: the last one starting at or before it.
    auto it = std::upper_bound(parameters.begin(), parameters.end(), at,
                               [](std::int64_t v, const checkpoints::ParameterEntry& p) { return v < p.offset; });
    if (it == parameters.begin()) continue;  // before the first parameter: nothing to place
    for (auto i = static_cast<std::size_t>(it - parameters.begin()) - 1; left > 0 && i < parameters.size(); ++i) {
      const auto& p = parameters[i];
      const std::int64_t n = std::min(left, p.offset + p.numel - at);
      if (n <= 0) continue;  // an empty parameter
      out.push_back({target_offset[i] + (at - p.offset), part, n});
      at += n, part += n, left -= n;
    }
  }
  return out;
}

}  // namespace shardscope::engine
