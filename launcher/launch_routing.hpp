#pragma once
// Which kind of launch `shardscope launch` flags ask for, decided as DeepSpeed's runner decides it
// (runner.py main()): no hostfile -> this machine only; a hostfile whose selection is this machine
// alone -> a local run of those slots; --no_ssh --node_rank R -> node R's ranks here (the user starts
// the same command on every node); otherwise -> node agents on every selected host.

#include <iosfwd>
#include <optional>
#include <string>

#include "configs/node_selection.hpp"
#include "launcher/hosts_plan.hpp"
#include "launcher/local_launcher.hpp"

namespace shardscope::launcher {

/// What the CLI parsed: the local launch's request plus the multi-node flags.
struct LaunchFlags {
  LaunchRequest launch;                  ///< include/exclude/num_gpus here are also the hostfile selection
  std::string hostfile = configs::kDefaultHostfile;
  bool hostfile_given = false;           ///< --hostfile on the command line (the missing-file warning)
  int num_nodes = -1;
  std::string launcher = "ssh";
  std::optional<int> ssh_port;
  std::string launcher_args;
  bool no_ssh = false;
  int node_rank = -1;
  std::string collector_addr;
  int collector_port = 0;
  std::optional<std::string> collector_secret_file;
  std::string agent_program;             ///< the shardscope executable (absolute; the same path on every host)
};

enum class LaunchRoute { kLocal, kHosts, kThisNode };

struct RoutedLaunch {
  LaunchRoute route = LaunchRoute::kLocal;
  LaunchRequest local;                   ///< kLocal, kThisNode
  std::optional<HostsRequest> hosts;     ///< kHosts (and the plan of kThisNode)
  std::vector<std::string> notes;        ///< DeepSpeed's messages ("Unable to find hostfile, ...")
};

/// Decides the route and fills its request. Throws LaunchError(kUsage) with DeepSpeed's message
/// where it has one ("Num nodes is >1 but no extra nodes available via hostfile", "Launching
/// training without ssh, but --node_rank is not set correctly.") plus the remedy.
RoutedLaunch route_launch(const LaunchFlags& flags);

/// Runs a routed launch (local_launcher, hosts_launcher, or this node's ranks), its notes first.
LaunchOutcome run_launch(const RoutedLaunch& routed, std::ostream& out, std::ostream& err);

/// Whether `host` names this machine: localhost, its host name, or one of its addresses.
bool is_this_machine(const std::string& host);

/// This machine's address that traffic to `remote` leaves from (sessions::local_address_toward);
/// throws LaunchError(kEnvironment) naming `remote` when none leads there.
std::string address_toward(const std::string& remote);

}  // namespace shardscope::launcher
