#pragma once
// A launch across hosts, planned before anything starts: which hosts and slots (the hostfile and
// DeepSpeed's selection flags), the global rank of each node's first rank in hostfile order (as
// DeepSpeed's launch.py numbers them), CPU or GPU ranks, the exported environment, and the job each
// node agent gets.

#include <optional>
#include <string>
#include <vector>

#include "configs/hostfile.hpp"
#include "configs/node_selection.hpp"
#include "launcher/environment_exports.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/node_job.hpp"
#include "launcher/node_transport.hpp"

namespace shardscope::launcher {

/// `shardscope launch --hostfile ...`: the local launch's request plus the multi-node choices.
struct HostsRequest {
  LaunchRequest launch;                     ///< train arguments, session, names, master port and address, grace;
                                            ///< num_procs > 0: that many CPU ranks on every host
  configs::Hostfile hostfile;
  configs::NodeSelectionOptions selection;
  NodeLauncher launcher = NodeLauncher::kSsh;
  std::optional<int> ssh_port;
  std::vector<std::string> launcher_args;
  std::string collector_addr;               ///< "" = this machine's address that faces MASTER_ADDR
  int collector_port = 0;                   ///< 0 = a free port
  std::optional<std::string> secret;        ///< a shared secret (--collector_secret_file); else a new one
  std::string agent_program;                ///< the shardscope executable, at the same path on every host
  double link_timeout_s = 10;               ///< an agent silent this long is unreachable
  double connect_timeout_s = 60;            ///< every agent must say hello within this
};

struct PlannedNode {
  std::string host;
  int node_rank = 0;
  std::vector<int> slots;  ///< GPU ids, or one entry per CPU rank
  int first_rank = 0;
};

struct HostsPlan {
  std::vector<PlannedNode> nodes;
  int world_size = 0;
  bool cpu = false;
  TrainArgsView train;
  Exports exports;
};

/// Selects the hosts and numbers the ranks. Throws LaunchError(kUsage) naming the flag or the
/// hostfile line (the selection's DeepSpeed errors, --num_procs with --num_gpus, train arguments
/// the launcher owns, a .deepspeed_env line without '=').
HostsPlan plan_hosts(const HostsRequest& request, const ExportSources& environment);

/// The job of `node`: its ranks, the rendezvous at `master_addr`, the collector (when recording),
/// every export and the run's secret in the ranks' environment, the launcher's directory.
NodeJob job_for(const HostsPlan& plan, const PlannedNode& node, const HostsRequest& request,
                const std::string& master_addr, const std::optional<std::string>& collector,
                const std::string& secret, const std::string& cwd);

/// "worker-1:3": how messages name a rank of a multi-host run.
std::string host_rank(const std::string& host, int rank);

}  // namespace shardscope::launcher
