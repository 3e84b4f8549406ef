#pragma once
// `shardscope allreduce`: one rank of a timed all-reduce across every rank of a launch, the
// preflight's bandwidth check: rendezvous as training does (MASTER_ADDR, RANK, WORLD_SIZE), a few
// warm-up rounds, then the mean time of `iterations` all-reduces of a float buffer, checked for
// the exact sum, with nccl-tests' algbw and busbw.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "profiler/allreduce_result.hpp"

namespace shardscope::engine {

struct AllReduceCheckOptions {
  std::int64_t bytes = 16 << 20;
  int iterations = 5;
  int warmup = 2;
  std::string device = "auto";  ///< as `shardscope train --device`
};

/// Runs this rank's part; every rank returns the same result, and rank 0 prints it to `out` as
/// `shardscope allreduce: {json}`. Throws CommTimeout when the ranks do not meet,
/// std::invalid_argument for a bad size or device.
profiler::AllReduceResult run_allreduce_check(const AllReduceCheckOptions& options, std::ostream& out);

}  // namespace shardscope::engine
