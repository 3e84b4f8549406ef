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

#include "launcher/hosts_plan.hpp"
#include "launcher/node_job.hpp"
#include "profiler/allreduce_result.hpp"

namespace shardscope::launcher {

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
  std::optional<profiler::AllReduceResult> allreduce;
  std::string allreduce_problem;
  bool ok = false;
};

/// Probes every host, then (when all can run) the all-reduce of `allreduce_bytes` across every
/// rank. The launcher's own lines go to `err`.
PreflightReport run_preflight(const HostsRequest& request, std::int64_t allreduce_bytes, std::ostream& err);

/// The table, nccl-tests style, with an OK/FAILED footer that names the failing hosts.
std::string format_preflight(const PreflightReport& report);
nlohmann::json preflight_to_json(const PreflightReport& report);

}  // namespace shardscope::launcher
