#pragma once
// `shardscope launch --preflight`: every host of the hostfile checked in parallel before a run,
// as one table (or JSON): reachable through the launcher, the shardscope version and build on each
// (skew is a warning naming both), GPUs against the hostfile's slots, /dev/shm, whether MASTER_PORT
// is free on the master host, and a short all-reduce across every rank over the run's backend
// with its bus bandwidth. A failing host is named with the fix.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/launcher/hosts_plan.hpp"
#include "engine/launcher/node_job.hpp"

namespace shardscope::engine::launcher {

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

struct PreflightHost {
  std::string host;
  int slots = 0;
  bool ok = false;
  std::optional<HostFacts> facts;
  std::vector<std::string> problems;  ///< each with its fix
  std::vector<std::string> warnings;
};

struct PreflightReport {
  std::vector<PreflightHost> hosts;
  bool cpu = false;
  int master_port = 0;
  std::optional<AllReduceResult> allreduce;
  std::string allreduce_problem;
  bool ok = false;
};

/// Probes every host, then (when all can run) the all-reduce of `allreduce_bytes` across every
/// rank. The launcher's own lines go to `err`.
PreflightReport run_preflight(const HostsRequest& request, std::int64_t allreduce_bytes, std::ostream& err);

/// The table, nccl-tests style, with an OK/FAILED footer that names the failing hosts.
std::string format_preflight(const PreflightReport& report);
nlohmann::json preflight_to_json(const PreflightReport& report);

}  // namespace shardscope::engine::launcher
