// shardscope node: the node agent a multi-node `shardscope launch` starts on every host (see
// launcher/node_agent.hpp). Its job arrives on stdin, or on the channel it opens back to
// the launcher with --connect; nothing of it is on this command line.
#include <iostream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/engine_module.hpp"
#include "launcher/node_agent.hpp"

namespace shardscope::app {
namespace {

ArgParser node_parser() {
  ArgParser parser("node",
                   "The node agent of a multi-node launch: `shardscope launch --hostfile ...` starts one per host\n"
                   "(over ssh, pdsh, mpirun or srun) and sends it the host's job on a private channel: stdin, or a\n"
                   "TCP connection back to the launcher (--connect). It starts that host's ranks as the local launcher\n"
                   "does, relays their output and exit status, answers clock probes, and stops its ranks when the\n"
                   "launcher says so, falls silent, or goes away. Not meant to be run by hand. See docs/launcher.md.");
  parser.option("connect", "HOST:PORT", "connect back to the launcher there instead of using stdin (pdsh, mpirun, srun)")
      .option("host", "NAME", "with --connect: this host's name in the hostfile (pdsh's %h)")
      .option("node_rank", "N", "with --connect: this host's node index (default: OMPI_COMM_WORLD_RANK)");
  return parser;
}

}  // namespace

int run_node_command(const CommandArgs& args) {
  const ArgParser parser = node_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  launcher::NodeAgentOptions o;
  o.connect = p.value("connect").value_or("");
  if (p.value("host")) o.identity = "host=" + *p.value("host");
  if (p.value("node_rank")) o.identity = "node=" + std::to_string(*p.integer("node_rank"));
  if (o.identity.empty()) o.identity = launcher::identity_from_environment();
  if (!o.connect.empty() && o.identity.empty())
    throw UsageError("node --connect needs to say which host it is: --host NAME or --node_rank N (mpirun and srun "
                     "set OMPI_COMM_WORLD_RANK or SLURMD_NODENAME, which it reads itself)");
  // The ranks this agent starts load the engine module; a host without it (or without LibTorch)
  // says so now, in the one line ssh relays, rather than once per rank. The agent never loads it.
  if (!engine_available("node")) return kExitFindings;
  return launcher::run_node_agent(o);
}

}  // namespace shardscope::app
