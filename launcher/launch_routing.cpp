#include "launcher/launch_routing.hpp"

#include <netdb.h>
#include <unistd.h>

#include <ostream>

#include "launcher/hosts_launcher.hpp"
#include "launcher/launch_error.hpp"
#include "sessions/net_address.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using sessions::host_name;

std::optional<configs::Hostfile> read_pool(const std::string& path) {
  try {
    return configs::read_hostfile(path);
  } catch (const configs::HostfileError& e) {
    throw usage_error(e.what());
  }
}

HostsRequest hosts_request(const LaunchFlags& f, configs::Hostfile pool) {
  HostsRequest r;
  r.launch = f.launch;
  r.hostfile = std::move(pool);
  r.selection.include = f.launch.include;
  r.selection.exclude = f.launch.exclude;
  r.selection.num_nodes = f.num_nodes;
  r.selection.num_gpus = f.launch.num_gpus;
  r.launcher = parse_node_launcher(f.launcher);
  r.ssh_port = f.ssh_port;
  r.launcher_args = split_launcher_args(f.launcher_args);
  r.collector_addr = f.collector_addr;
  r.collector_port = f.collector_port;
  if (f.collector_secret_file) {
    try {
      r.secret = sessions::read_secret_file(*f.collector_secret_file);
    } catch (const std::exception& e) {
      throw usage_error(std::string("--collector_secret_file: ") + e.what());
    }
  }
  r.agent_program = f.agent_program;
  return r;
}

// A hostfile that selects only this machine runs like a local launch of the selected slots.
LaunchRequest local_request_of(const HostsRequest& r, const PlannedNode& node, bool cpu) {
  LaunchRequest local = r.launch;
  local.include.clear();
  local.exclude.clear();
  local.num_gpus = -1;
  if (cpu) {
    local.num_procs = static_cast<int>(node.slots.size());
  } else {
    local.include = "localhost:";
    for (std::size_t i = 0; i < node.slots.size(); ++i) local.include += (i ? "," : "") + std::to_string(node.slots[i]);
  }
  if (local.master_addr.empty()) local.master_addr = "127.0.0.1";  // as DeepSpeed forces for one host
  return local;
}

// --no_ssh: MASTER_ADDR is the first host's address; no ssh to ask it, so its name must resolve.
std::string no_ssh_master_address(const LaunchFlags& f, const HostsPlan& plan) {
  if (!f.launch.master_addr.empty()) return f.launch.master_addr;
  const std::string& first = plan.nodes.front().host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(first.c_str(), nullptr, &hints, &found) != 0 || !found)
    throw usage_error("Unable to detect suitable master address for node " + first + " (its name does not resolve here, "
                "and --no_ssh cannot ask it with `hostname -I`), please manually specify one via --master_addr");
  char text[NI_MAXHOST] = "";
  ::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(found);
  return text;
}

// --no_ssh node R: this machine's share of the hostfile's ranks, recording into node 0's session.
RoutedLaunch route_this_node(const LaunchFlags& f, const HostsRequest& hosts) {
  const HostsPlan plan = plan_hosts(hosts, {{}, "", ""});
  if (f.node_rank < 0 || f.node_rank >= static_cast<int>(plan.nodes.size()))
    throw usage_error("Launching training without ssh, but --node_rank is not set correctly. Give --node_rank R with 0 <= R < " +
                std::to_string(plan.nodes.size()) + " (the hostfile selects " + std::to_string(plan.nodes.size()) +
                " node(s)): the same command runs on every node, each with its own R");
  const PlannedNode& node = plan.nodes[static_cast<std::size_t>(f.node_rank)];
  const std::string master = no_ssh_master_address(f, plan);
  const int collector_port = f.collector_port > 0 ? f.collector_port : f.launch.master_port + 1;
  RoutedLaunch routed;
  routed.route = LaunchRoute::kThisNode;
  NodeJob job = job_for(plan, node, hosts, master, std::nullopt, "", "");
  routed.local = launch_request_for(job, f.launch.program);
  routed.local.session_db = node.node_rank == 0 ? f.launch.session_db : std::nullopt;
  routed.local.name = f.launch.name;
  routed.local.command_line = f.launch.command_line;
  routed.local.environment_report = f.launch.environment_report;
  routed.local.handle_signals = f.launch.handle_signals;
  routed.local.secret = hosts.secret;
  routed.local.collector_port = collector_port;
  if (f.launch.session_db || hosts.secret)  // the collector listens on the address facing MASTER_ADDR
    routed.local.collector_bind_host = f.collector_addr.empty() ? address_toward(master) : f.collector_addr;
  if (node.node_rank > 0 && hosts.secret) routed.local.join_collector = master + ":" + std::to_string(collector_port);
  if (node.node_rank > 0 && f.launch.session_db)
    throw usage_error("--session belongs on node 0 only (it hosts the collector); on node " + std::to_string(node.node_rank) +
                " give --collector_secret_file with the same file as node 0 so its ranks are recorded there");
  if (node.node_rank > 0 && !hosts.secret)
    routed.notes.push_back("this node's ranks are not recorded in a session: give every node the same "
                           "--collector_secret_file (node 0 with --session) to record them");
  routed.hosts = hosts;
  return routed;
}

}  // namespace

std::string address_toward(const std::string& remote) {
  try {
    return sessions::local_address_toward(remote);
  } catch (const sessions::NoRouteError& e) {
    throw LaunchError(LaunchError::Kind::kEnvironment, e.what());
  }
}

bool is_this_machine(const std::string& host) {
  return host == "localhost" || host == host_name() || sessions::is_local_address(host);
}

RoutedLaunch route_launch(const LaunchFlags& f) {
  RoutedLaunch routed;
  auto pool = read_pool(f.hostfile);
  if (!pool) {
    if (f.hostfile_given) routed.notes.push_back(configs::kNoHostfileWarning);
    if (f.num_nodes > 1) throw usage_error("Num nodes is >1 but no extra nodes available via hostfile (" + f.hostfile +
                                     " does not exist; give --hostfile FILE with one `HOST slots=N` line per node)");
    if (f.no_ssh && f.node_rank > 0)
      throw usage_error("Launching training without ssh, but --node_rank is not set correctly. Without a hostfile there is "
                  "one node (--node_rank 0); give every node the same --hostfile");
    routed.local = f.launch;
    return routed;
  }
  HostsRequest hosts = hosts_request(f, std::move(*pool));
  if (f.no_ssh) return route_this_node(f, hosts);
  const HostsPlan plan = plan_hosts(hosts, {{}, "", ""});
  if (plan.nodes.size() == 1 && is_this_machine(plan.nodes.front().host)) {
    routed.local = local_request_of(hosts, plan.nodes.front(), plan.cpu);
    return routed;
  }
  routed.route = LaunchRoute::kHosts;
  routed.hosts = std::move(hosts);
  return routed;
}

LaunchOutcome run_launch(const RoutedLaunch& routed, std::ostream& out, std::ostream& err) {
  for (const auto& note : routed.notes) err << "shardscope launch: " << note << "\n";
  if (routed.route == LaunchRoute::kHosts) return launch_on_hosts(*routed.hosts, out, err);
  return launch_local(routed.local, out, err);
}

}  // namespace shardscope::launcher
