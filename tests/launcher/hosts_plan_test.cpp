// A multi-host launch before anything starts: the route DeepSpeed's runner would take, the ranks
// numbered in hostfile order, the exported environment and .deepspeed_env, and the commands of
// every transport (ssh, pdsh, mpirun, srun), checked as data: slurm has no cluster here, so its
// command and environment mapping are what is tested of it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "launcher/environment_exports.hpp"
#include "launcher/hosts_plan.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_routing.hpp"
#include "launcher/node_agent.hpp"
#include "launcher/node_transport.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::launcher {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

std::string env_of(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& e : env)
    if (e.rfind(key + "=", 0) == 0) return e.substr(key.size() + 1);
  return "<unset>";
}

HostsRequest request_for(const std::string& hostfile_text) {
  HostsRequest r;
  r.hostfile = configs::parse_hostfile(hostfile_text, "hosts");
  r.launch.program_args = {"train"};
  r.launch.train_args = {"--config", "ds.json", "--steps", "3"};
  r.agent_program = "/opt/shard scope/shardscope";
  return r;
}

TEST(HostsPlan, NumbersRanksInHostfileOrderAsLaunchPyDoes) {
  auto r = request_for("worker-0 slots=4\nworker-1 slots=4\nworker-2 slots=2\n");
  r.selection.include = "worker-2@worker-0:1,3";
  const auto plan = plan_hosts(r, {});
  ASSERT_EQ(plan.nodes.size(), 2u);
  EXPECT_EQ(plan.nodes[0].host, "worker-0");  // the hostfile's order, not the include list's
  EXPECT_EQ(plan.nodes[0].slots, (std::vector<int>{1, 3}));
  EXPECT_EQ(plan.nodes[1].first_rank, 2);
  EXPECT_EQ(plan.world_size, 4);
  EXPECT_FALSE(plan.cpu);
  auto cpu = request_for("a slots=8\nb slots=8\n");
  cpu.launch.num_procs = 2;
  const auto cpu_plan = plan_hosts(cpu, {});
  EXPECT_TRUE(cpu_plan.cpu);
  EXPECT_EQ(cpu_plan.world_size, 4);
  EXPECT_EQ(cpu_plan.nodes[1].first_rank, 2);
  cpu.selection.num_gpus = 1;
  EXPECT_TRUE(contains(error_of([&] { plan_hosts(cpu, {}); }), "cannot be combined with --num_gpus"));
  auto owned = request_for("a slots=1\n");
  owned.launch.train_args = {"--session", "x.db"};
  EXPECT_TRUE(contains(error_of([&] { plan_hosts(owned, {}); }), "put it before `--`"));
}

TEST(HostsPlan, TheJobCarriesExportsAndTheSecretButNoCommandLineDoes) {
  auto r = request_for("a slots=2\nb slots=2\n");
  r.launch.num_procs = 2;
  const auto plan = plan_hosts(r, {{"NCCL_DEBUG=INFO", "PATH=/usr/bin", "PYTHONPATH=/x", "HF_TOKEN=hf_abc"}, "", ""});
  const NodeJob job = job_for(plan, plan.nodes[1], r, "10.0.0.1", std::string("10.0.0.1:4000"), "the-secret", "/work");
  EXPECT_EQ(job.first_rank, 2);
  EXPECT_EQ(job.world_size, 4);
  EXPECT_EQ(job.master_addr, "10.0.0.1");
  EXPECT_EQ(job.cwd, "/work");
  const EnvironmentPairs expected = {{"NCCL_DEBUG", "INFO"}, {"PYTHONPATH", "/x"}, {"SHARDSCOPE_COLLECTOR_SECRET", "the-secret"}};
  EXPECT_EQ(job.environment, expected);  // PATH and HF_TOKEN are not DeepSpeed exports
  const NodeJob back = job_from_json(job_to_json(job));
  EXPECT_EQ(back.environment, expected);
  EXPECT_EQ(back.slots, job.slots);
  EXPECT_EQ(back.collector, job.collector);
  TransportOptions o;
  o.hosts = {"a", "b"};
  o.agent_program = r.agent_program;
  for (const auto& t : transport_processes(o, {"PATH=/usr/bin:/bin"}))
    for (const auto& arg : t.command.argv) EXPECT_FALSE(contains(arg, "the-secret") || contains(arg, "INFO")) << arg;
}

TEST(EnvironmentExports, DeepSpeedsPrefixesAndDeepspeedEnvFilesWithDsEnvFile) {
  test::TempDir home, cwd;
  std::ofstream(home.file(".deepspeed_env")) << "# comment\nNCCL_SOCKET_IFNAME=eth0\nWANDB_API_KEY = abc \n";
  std::ofstream(cwd.file(".deepspeed_env")) << "NCCL_SOCKET_IFNAME=ib0\n";
  auto exports = collect_exports({{"NCCL_DEBUG=WARN", "UCX_TLS=tcp", "MV2_X=1", "MLFLOW_URI=u", "HOME=/root",
                                   "SHARDSCOPE_COMM_TIMEOUT=30", "SHARDSCOPE_COLLECTOR_SECRET=old"},
                                  home.file(""), cwd.file("")});
  const EnvironmentPairs expected = {{"NCCL_DEBUG", "WARN"},         {"UCX_TLS", "tcp"},
                                     {"MV2_X", "1"},                 {"MLFLOW_URI", "u"},
                                     {"SHARDSCOPE_COMM_TIMEOUT", "30"}, {"NCCL_SOCKET_IFNAME", "ib0"},
                                     {"WANDB_API_KEY", "abc"}};
  EXPECT_EQ(exports.variables, expected);
  ASSERT_EQ(exports.notes.size(), 2u);
  EXPECT_EQ(exports.notes[0], "deepspeed_env file = " + home.file(".deepspeed_env"));
  // DS_ENV_FILE renames the file; AISC_JOB_NAME keeps each node's own NCCL_IB_HCA.
  std::ofstream(cwd.file("my.env")) << "A_B=1\n";
  exports = collect_exports({{"DS_ENV_FILE=my.env", "AISC_JOB_NAME=j", "NCCL_IB_HCA=mlx5"}, home.file(""), cwd.file("")});
  EXPECT_EQ(exports.variables, (EnvironmentPairs{{"A_B", "1"}}));
  std::ofstream(cwd.file("bad.env")) << "NCCL_DEBUG INFO\n";
  EXPECT_TRUE(contains(error_of([&] { collect_exports({{"DS_ENV_FILE=bad.env"}, "", cwd.file("")}); }),
                       "bad.env:1: 'NCCL_DEBUG INFO' is not KEY=VALUE"));
}

TEST(NodeTransport, SshPdshMpirunAndSrunCommands) {
  TransportOptions o;
  o.hosts = {"10.0.0.1", "10.0.0.2"};
  o.agent_program = "/opt/shard scope/shardscope";
  o.ssh_port = 2222;
  o.launcher_args = split_launcher_args("-F '/tmp/my config'");
  o.connect_address = "10.0.0.1:40000";
  o.mpi_hostfile = "/tmp/hosts.mpi";
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "PDSH_SSH_ARGS_APPEND=-F cfg", "SLURM_JOB_ID=77"};
  const auto ssh = transport_processes(o, env);
  ASSERT_EQ(ssh.size(), 2u);
  EXPECT_EQ(ssh[1].node, 1);
  EXPECT_TRUE(ssh[1].command.stdin_pipe);
  const std::vector<std::string> ssh_argv = {"/usr/bin/ssh", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=2",
                                             "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=10", "-p", "2222",
                                             "-F", "/tmp/my config", "10.0.0.2", "exec '/opt/shard scope/shardscope' node"};
  EXPECT_EQ(ssh[1].command.argv, ssh_argv);
  o.launcher = NodeLauncher::kPdsh;
  o.launcher_args = {};
  const auto pdsh = transport_processes(o, env);
  ASSERT_EQ(pdsh.size(), 1u);
  EXPECT_EQ(pdsh[0].command.argv,
            (std::vector<std::string>{"/usr/bin/pdsh", "-S", "-f", "1024", "-w", "10.0.0.1,10.0.0.2",
                                      "exec '/opt/shard scope/shardscope' node --connect 10.0.0.1:40000 --host %h"}));
  EXPECT_EQ(env_of(pdsh[0].command.env, "PDSH_RCMD_TYPE"), "ssh");
  EXPECT_EQ(env_of(pdsh[0].command.env, "PDSH_SSH_ARGS_APPEND"),
            "-F cfg -o BatchMode=yes -o ServerAliveInterval=2 -o ServerAliveCountMax=3 -o ConnectTimeout=10 -p 2222");
  o.launcher = NodeLauncher::kOpenMpi;
  const auto mpi = transport_processes(o, env);
  EXPECT_EQ(mpi[0].command.argv,
            (std::vector<std::string>{"/usr/bin/mpirun", "-n", "2", "--hostfile", "/tmp/hosts.mpi", "--map-by", "node",
                                      "--bind-to", "none", "/opt/shard scope/shardscope", "node", "--connect",
                                      "10.0.0.1:40000"}));
  EXPECT_TRUE(contains(env_of(mpi[0].command.env, "OMPI_MCA_plm_rsh_args"), "ServerAliveInterval=2"));
  // slurm: srun in the allocation, one task per host, each finding itself in SLURMD_NODENAME.
  test::TempDir bin;
  std::ofstream(bin.file("srun")) << "#!/bin/sh\n";
  ::chmod(bin.file("srun").c_str(), 0755);
  o.launcher = NodeLauncher::kSlurm;
  const std::string bin_dir = bin.file("srun").substr(0, bin.file("srun").size() - std::string("/srun").size());
  const auto srun = transport_processes(o, {"PATH=/nonexistent:" + bin_dir, "SLURM_JOB_ID=77"});
  EXPECT_EQ(srun[0].command.argv,
            (std::vector<std::string>{bin.file("srun"), "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                                      "--nodelist=10.0.0.1,10.0.0.2", "--kill-on-bad-exit=0",
                                      "/opt/shard scope/shardscope", "node", "--connect", "10.0.0.1:40000"}));
  EXPECT_TRUE(contains(error_of([&] { transport_processes(o, {"PATH=" + bin_dir}); }), "SLURM_JOB_ID is not set"));
  EXPECT_TRUE(contains(error_of([&] { transport_processes(o, {"PATH=/nonexistent"}); }), "launcher 'slurm' not installed."));
  ::setenv("SLURMD_NODENAME", "gpu-node-7", 1);
  EXPECT_EQ(identity_from_environment(), "host=gpu-node-7");
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  EXPECT_EQ(identity_from_environment(), "node=3");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("SLURMD_NODENAME");
  EXPECT_TRUE(contains(error_of([] { parse_node_launcher("mvapich"); }), "ssh (the default), pdsh, openmpi or slurm"));
  EXPECT_EQ(parse_node_launcher("PDSH"), NodeLauncher::kPdsh);
  EXPECT_TRUE(contains(error_of([] { split_launcher_args("-F 'unclosed"); }), "No closing quotation"));
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(LaunchRouting, FollowsDeepSpeedsRunnerFromNoHostfileToEveryHost) {
  test::TempDir dir;
  LaunchFlags f;
  f.launch.train_args = {"--steps", "1"};
  f.hostfile = dir.file("missing");
  EXPECT_EQ(route_launch(f).route, LaunchRoute::kLocal);
  f.hostfile_given = true;
  EXPECT_EQ(route_launch(f).notes, (std::vector<std::string>{configs::kNoHostfileWarning}));
  f.num_nodes = 2;
  EXPECT_TRUE(contains(error_of([&] { route_launch(f); }), "Num nodes is >1 but no extra nodes available via hostfile"));
  f.num_nodes = -1;
  std::ofstream(dir.file("hosts")) << "localhost slots=2\n";
  f.hostfile = dir.file("hosts");
  const auto local = route_launch(f);  // a hostfile of this machine alone runs locally, DeepSpeed's way
  EXPECT_EQ(local.route, LaunchRoute::kLocal);
  EXPECT_EQ(local.local.include, "localhost:0,1");
  std::ofstream(dir.file("hosts")) << "10.255.0.1 slots=2\n10.255.0.2 slots=2\n";
  EXPECT_EQ(route_launch(f).route, LaunchRoute::kHosts);
  f.no_ssh = true;
  EXPECT_TRUE(contains(error_of([&] { route_launch(f); }),
                       "Launching training without ssh, but --node_rank is not set correctly."));
  f.node_rank = 1;
  f.launch.num_procs = 2;
  const auto node = route_launch(f);
  EXPECT_EQ(node.route, LaunchRoute::kThisNode);
  ASSERT_TRUE(node.local.placement);
  EXPECT_EQ(node.local.placement->first_rank, 2);
  EXPECT_EQ(node.local.placement->world_size, 4);
  EXPECT_EQ(node.local.master_addr, "10.255.0.1");
  EXPECT_EQ(node.notes.size(), 1u);  // no shared secret: node 1's ranks are not recorded, and it says so
  EXPECT_TRUE(is_this_machine("localhost"));
  EXPECT_TRUE(is_this_machine("127.0.0.1"));
  EXPECT_FALSE(is_this_machine("10.255.0.2"));
}

}  // namespace
}  // namespace shardscope::launcher
