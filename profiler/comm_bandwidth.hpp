#pragma once
// Algorithm and bus bandwidth of one collective, as nccl-tests defines them (PERFORMANCE.md) and
// DeepSpeed's comms logger computes them (utils/comms_logging.py calc_bw_log).

#include <cstdint>
#include <optional>
#include <string>

namespace shardscope::profiler {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,      ///< all_gather, all_gather_into_tensor (_allgather_base)
  kReduceScatter,  ///< reduce_scatter, reduce_scatter_tensor (_reduce_scatter_base)
  kAllToAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kBarrier,
};

/// "all_reduce", "all_gather_into_tensor", ... -> op; nullopt for a name DeepSpeed does not know.
std::optional<CollectiveOp> collective_from_name(const std::string& name);
/// The canonical DeepSpeed name ("all_reduce", "all_gather", "reduce_scatter", ...).
const char* collective_name(CollectiveOp op);

struct Bandwidth {
  double algbw_gbps = 0;  ///< gigabits per second, as DeepSpeed prints them
  double busbw_gbps = 0;
};

/// Bandwidths for `message_bytes` moved by `op` over `world_size` ranks in `latency_ms`.
/// message_bytes is the size of the tensor argument, as DeepSpeed records it: for all-gather and
/// reduce-scatter that is one rank's shard, multiplied by world_size here.
Bandwidth collective_bandwidth(CollectiveOp op, std::uint64_t message_bytes, int world_size,
                               double latency_ms);

/// nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
/// reduce-scatter and all-to-all, 1 for the rest.
double bus_bandwidth_factor(CollectiveOp op, int world_size);

}  // namespace shardscope::profiler
