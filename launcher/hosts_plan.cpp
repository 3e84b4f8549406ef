#include "launcher/hosts_plan.hpp"

#include "launcher/launch_error.hpp"
#include "sessions/run_secret.hpp"

namespace shardscope::launcher {
namespace {

std::vector<configs::SelectedNode> selected_nodes(const HostsRequest& r) {
  try {
    return configs::select_nodes(r.hostfile, r.selection);
  } catch (const configs::NodeSelectionError& e) {
    throw usage_error(e.what());
  }
}

bool cpu_device(const TrainArgsView& train) { return train.device && train.device->rfind("cpu", 0) == 0; }

}  // namespace

std::string host_rank(const std::string& host, int rank) { return host + ":" + std::to_string(rank); }

HostsPlan plan_hosts(const HostsRequest& r, const ExportSources& environment) {
  HostsPlan plan;
  plan.train = scan_train_args(r.launch.train_args);
  check_train_args(plan.train);
  if (r.launch.num_procs < 0) throw usage_error("--num_procs must be a positive number of CPU ranks per host");
  if (r.launch.num_procs > 0 && r.selection.num_gpus > 0)
    throw usage_error("--num_procs starts CPU ranks on every host; it cannot be combined with --num_gpus");
  plan.cpu = r.launch.num_procs > 0 || cpu_device(plan.train);
  const auto selected = selected_nodes(r);
  for (const auto& node : selected) {
    PlannedNode planned{node.host, static_cast<int>(plan.nodes.size()), node.slots, plan.world_size};
    if (r.launch.num_procs > 0) {
      planned.slots.clear();
      for (int i = 0; i < r.launch.num_procs; ++i) planned.slots.push_back(i);
    }
    plan.world_size += static_cast<int>(planned.slots.size());
    plan.nodes.push_back(std::move(planned));
  }
  plan.exports = collect_exports(environment);
  return plan;
}

NodeJob job_for(const HostsPlan& plan, const PlannedNode& node, const HostsRequest& r, const std::string& master_addr,
                const std::optional<std::string>& collector, const std::string& secret, const std::string& cwd) {
  NodeJob job;
  job.host = node.host;
  job.node_rank = node.node_rank;
  job.node_count = static_cast<int>(plan.nodes.size());
  job.first_rank = node.first_rank;
  job.world_size = plan.world_size;
  job.slots = node.slots;
  job.cpu = plan.cpu;
  job.master_addr = master_addr;
  job.master_port = r.launch.master_port;
  job.rank_command = r.launch.program_args.empty() ? "train" : r.launch.program_args.front();
  job.rank_args = r.launch.train_args;
  job.collector = collector;
  job.environment = plan.exports.variables;
  if (collector) job.environment.emplace_back(sessions::kCollectorSecretVariable, secret);
  job.cwd = cwd;
  job.each_rank_log_dir = r.launch.each_rank_log_dir;
  job.grace_seconds = r.launch.grace_seconds;
  job.launcher_timeout_s = r.link_timeout_s + 5;
  return job;
}

}  // namespace shardscope::launcher
