#pragma once
// What one timed all-reduce across every rank of a launch measured: `shardscope allreduce` (the
// engine's ranks) prints it on rank 0 and `launch --preflight` (the launcher) reads it back from
// that rank's output, so both sides share this line format.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardscope::profiler {

/// What `shardscope allreduce` prints on rank 0, before its JSON.
inline constexpr const char* kAllReduceMarker = "shardscope allreduce: ";

/// One timed all-reduce (nccl-tests' definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n).
struct AllReduceResult {
  int world_size = 0;
  std::string backend;  ///< "gloo" or "nccl"
  std::int64_t bytes = 0;
  int iterations = 0;
  double mean_ms = 0;
  double algbw_gbps = 0;  ///< GB/s
  double busbw_gbps = 0;  ///< GB/s
  bool correct = false;   ///< every rank saw the exact sum
};

nlohmann::json allreduce_to_json(const AllReduceResult& result);
/// The result in a line of rank 0's output ("... shardscope allreduce: {...}"), nullopt elsewhere.
std::optional<AllReduceResult> allreduce_from_line(const std::string& line);

}  // namespace shardscope::profiler
