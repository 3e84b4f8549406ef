#pragma once
// How the node agents get started on the hosts (--launcher): the commands, built as data so a test
// can read them without a cluster. `ssh` (the default): one OpenSSH client per host, the agent's
// job on its stdin. `pdsh`: one pdsh for every host. `openmpi`: mpirun, one agent per host.
// `slurm`: srun inside an allocation, one task per host. The last three forward no stdin, so their
// agents connect back to the launcher (agent_channel.hpp). Every ssh, including pdsh's and
// mpirun's, runs with BatchMode (no password prompt can hang a launch) and keepalives, so a dead
// link ends it within seconds.

#include <optional>
#include <string>
#include <vector>

#include "launcher/rank_process.hpp"

namespace shardscope::launcher {

enum class NodeLauncher { kSsh, kPdsh, kOpenMpi, kSlurm };

/// "ssh", "pdsh", "openmpi", "slurm" (case-insensitive, as DeepSpeed lowers --launcher). Throws
/// LaunchError(kUsage) for another, naming the supported ones (DeepSpeed's mpich, impi and mvapich
/// are not: their agents would need those MPIs' own stdin and environment rules).
NodeLauncher parse_node_launcher(const std::string& name);
const char* node_launcher_name(NodeLauncher launcher);
/// Whether the agents of this launcher connect back (no stdin channel).
bool connects_back(NodeLauncher launcher);

struct TransportOptions {
  NodeLauncher launcher = NodeLauncher::kSsh;
  std::vector<std::string> hosts;          ///< the selected hosts, in node order
  std::string agent_program;               ///< the shardscope executable, at the same path on every host
  std::optional<int> ssh_port;             ///< --ssh_port
  std::vector<std::string> launcher_args;  ///< --launcher_args, split as a shell would
  std::string connect_address;             ///< connect-back launchers: where the agents connect ("ADDR:PORT")
  std::string mpi_hostfile;                ///< openmpi: a file naming each selected host with one slot
  int keepalive_interval_s = 2;            ///< ssh ServerAliveInterval
  int keepalive_count = 3;                 ///< ssh ServerAliveCountMax: a dead link ends ssh in about 6 s
  int connect_timeout_s = 10;              ///< ssh ConnectTimeout
};

/// One process the launcher starts: for ssh one per host (`node` is its index), otherwise one for
/// all hosts (`node` is -1).
struct TransportProcess {
  RankCommand command;
  int node = -1;
  std::string what;  ///< "ssh to worker-1", "pdsh", "mpirun", "srun": how messages name it
};

/// The commands for `options`, each with `base_env` (the launcher's environment) plus what the
/// transport needs (PDSH_RCMD_TYPE, PDSH_SSH_ARGS_APPEND, OMPI_MCA_plm_rsh_args). Throws
/// LaunchError(kEnvironment) when the transport's program is not installed ("launcher 'pdsh' not
/// installed.", DeepSpeed's words, plus the remedy) or slurm runs outside an allocation.
std::vector<TransportProcess> transport_processes(const TransportOptions& options,
                                                  const std::vector<std::string>& base_env);

/// The ssh options every connection gets: BatchMode, keepalives, ConnectTimeout, and -p PORT.
std::vector<std::string> ssh_options(const TransportOptions& options);

/// Splits --launcher_args as a POSIX shell would (quotes and backslashes), as DeepSpeed's shlex.split.
/// Throws LaunchError(kUsage) for an unterminated quote.
std::vector<std::string> split_launcher_args(const std::string& text);

/// The absolute path of `program` found in `path_variable` (a PATH value), "" when none.
std::string find_program(const std::string& program, const std::string& path_variable);

/// `text` quoted for a POSIX shell (the remote command ssh hands the user's login shell).
std::string shell_quote(const std::string& text);

}  // namespace shardscope::launcher
