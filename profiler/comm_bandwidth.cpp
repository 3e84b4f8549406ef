#include "profiler/comm_bandwidth.hpp"

#include <stdexcept>
#include <utility>

namespace shardscope::profiler {
namespace {

const std::pair<const char*, CollectiveOp> kNames[] = {
    {"all_reduce", CollectiveOp::kAllReduce},
    {"all_reduce_coalesced", CollectiveOp::kAllReduce},
    {"inference_all_reduce", CollectiveOp::kAllReduce},
    {"all_gather", CollectiveOp::kAllGather},
    {"all_gather_into_tensor", CollectiveOp::kAllGather},
    {"allgather_base", CollectiveOp::kAllGather},
    {"reduce_scatter", CollectiveOp::kReduceScatter},
    {"reduce_scatter_tensor", CollectiveOp::kReduceScatter},
    {"reduce_scatter_base", CollectiveOp::kReduceScatter},
    {"all_to_all_single", CollectiveOp::kAllToAll},
    {"all_to_all", CollectiveOp::kAllToAll},
    {"broadcast", CollectiveOp::kBroadcast},
    {"reduce", CollectiveOp::kReduce},
    {"gather", CollectiveOp::kGather},
    {"scatter", CollectiveOp::kScatter},
    {"send", CollectiveOp::kSend},
    {"isend", CollectiveOp::kSend},
    {"recv", CollectiveOp::kRecv},
    {"irecv", CollectiveOp::kRecv},
    {"barrier", CollectiveOp::kBarrier},
};

}  // namespace

std::optional<CollectiveOp> collective_from_name(const std::string& name) {
  for (const auto& [text, op] : kNames)
    if (name == text) return op;
  return std::nullopt;
}

const char* collective_name(CollectiveOp op) {
  for (const auto& [text, candidate] : kNames)
    if (candidate == op) return text;  // the first name of each op is the canonical one
  return "unknown";
}

double bus_bandwidth_factor(CollectiveOp op, int world_size) {
  const double n = world_size;
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1) / n;
    default: return 1.0;
  }
}

Bandwidth collective_bandwidth(CollectiveOp op, std::uint64_t message_bytes, int world_size,
                               double latency_ms) {
  if (world_size < 1) throw std::invalid_argument("collective_bandwidth: world_size must be >= 1");
  if (!(latency_ms > 0)) return {};
  double size = static_cast<double>(message_bytes);
  // DeepSpeed scales the per-rank tensor of gathers and scatters up to the whole buffer, and
  // counts all-reduce's algorithm bandwidth as two passes over the data.
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter) size *= world_size;
  const double bytes_per_ms = size / latency_ms;
  const double algbw = op == CollectiveOp::kAllReduce ? 2.0 * bytes_per_ms : bytes_per_ms;
  double busbw = bytes_per_ms * bus_bandwidth_factor(op, world_size);
  if (op != CollectiveOp::kAllReduce && bus_bandwidth_factor(op, world_size) == 1.0) busbw = algbw;
  // bytes per millisecond -> gigabits per second: * 8 bits * 1000 ms/s / 1e9.
  constexpr double kToGbps = 8.0 / 1e6;
  return {algbw * kToGbps, busbw * kToGbps};
}

}  // namespace shardscope::profiler
