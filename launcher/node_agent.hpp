#pragma once
// `shardscope node`: the node agent a multi-node launch starts on every host (over ssh, pdsh,
// mpirun or srun). It reads its whole job from its private channel (never from argv), starts and
// supervises that host's ranks exactly as the local launcher does (RankSupervisor, RankProcess),
// relays every line and exit status back, answers the launcher's clock probes, and stops its ranks
// and exits when the launcher says so, when its channel closes, or when the launcher falls silent.

#include <string>

namespace shardscope::launcher {

class BlockingChannel;

/// How the agent reaches its launcher.
struct NodeAgentOptions {
  /// Empty: the channel is this process's stdin/stdout (ssh). Otherwise "HOST:PORT" to connect back
  /// to (pdsh, mpirun, srun forward no stdin): the agent prints its token line on stdout first.
  std::string connect;
  /// With connect: how the launcher knows this agent, "node=K" or "host=NAME" (from --node_rank,
  /// --host, or OMPI_COMM_WORLD_RANK / SLURMD_NODENAME when neither is given).
  std::string identity;
  std::string program = "/proc/self/exe";  ///< the ranks' executable
};

/// Runs the agent to the end; returns its exit code (0 when the job ran, whatever the ranks did:
/// the launcher judges them; 1 when the channel failed; 2 when the job could not start).
int run_node_agent(const NodeAgentOptions& options);

/// The identity from the environment a transport gives its tasks: "node=" OMPI_COMM_WORLD_RANK,
/// "host=" SLURMD_NODENAME, else "" (the caller must say).
std::string identity_from_environment();

/// Runs the agent's protocol on an open channel (what run_node_agent does after connecting).
int serve_node_agent(BlockingChannel& channel, const NodeAgentOptions& options);

}  // namespace shardscope::launcher
