#pragma once
// From `shardscope launch` flags to the ranks to start: which devices, how many ranks, and each
// rank's command line and environment (MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_SIZE, CROSS_RANK, CROSS_SIZE and CUDA_VISIBLE_DEVICES, as DeepSpeed's launch.py sets them).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/environment_exports.hpp"
#include "launcher/rank_supervisor.hpp"
#include "launcher/run_doctor.hpp"
#include "sessions/environment_report.hpp"

namespace shardscope::launcher {

inline constexpr int kDefaultMasterPort = 29500;  ///< DeepSpeed's TORCH_DISTRIBUTED_DEFAULT_PORT

/// Where the ranks of one node sit in a multi-node run.
struct NodePlacement {
  std::string name;      ///< the node's hostfile name: accepted in --include like localhost
  int node_rank = 0;     ///< CROSS_RANK
  int node_count = 1;    ///< CROSS_SIZE
  int first_rank = 0;    ///< RANK of the node's first rank
  int world_size = 1;    ///< WORLD_SIZE of the whole run
};

struct LaunchRequest {
  std::string program;                    ///< the rank executable (the CLI passes /proc/self/exe)
  std::vector<std::string> program_args;  ///< before the train arguments (the CLI: {"train"})
  std::vector<std::string> train_args;    ///< what follows `--`
  int num_gpus = -1;                      ///< -1: not given
  int num_procs = 0;                      ///< > 0: that many CPU ranks instead of GPUs
  std::string include, exclude;           ///< NODE_SPEC lists
  std::string master_addr;                ///< "" = 127.0.0.1
  int master_port = kDefaultMasterPort;
  std::optional<std::string> each_rank_log_dir;
  std::optional<std::string> session_db;  ///< record the run (the launcher hosts the collector)
  std::string collector_bind_host;        ///< the collector's address; "" = 127.0.0.1
  int collector_port = 0;                 ///< 0 = a free port
  std::optional<std::string> join_collector;  ///< --no_ssh node R > 0: report to node 0's collector (HOST:PORT)
  std::optional<std::string> secret;      ///< a shared run secret (--collector_secret_file); else a new one
  std::string name;                       ///< session name; default: train --name, else the config's stem
  std::vector<std::string> command_line;  ///< the launcher's own argv, recorded in the session
  std::optional<int> gpu_count;           ///< GPUs of this machine; unset = count_local_gpus()
  std::optional<std::vector<std::string>> base_env;  ///< "K=V" entries; unset = this process's environment
  std::optional<NodePlacement> placement;          ///< unset: a one-machine run
  EnvironmentPairs extra_env;                      ///< set on every rank after base_env (exports, secret)
  double grace_seconds = 10;
  bool handle_signals = true;
  DoctorOptions doctor;                   ///< --hang-after, --on-hang: the run doctor watches a run it records
  /// The session's environment report; unset = profiler::collect_environment_report().
  std::function<sessions::EnvironmentReport()> environment_report;
};

/// The flags of the train arguments the launcher needs to know about.
struct TrainArgsView {
  std::optional<std::string> config;
  std::optional<std::string> device;
  std::optional<std::string> name;
  std::optional<std::string> session;
  std::optional<std::string> collector;
  std::optional<std::string> deepspeed_version;  ///< whose rules validate --config (`launch` passes its own)
  std::vector<std::string> overrides;  ///< --set values, in order
};

/// Finds --config, --device, --name, --session, --collector, --deepspeed-version and --set (as
/// `--x v` or `--x=v`).
TrainArgsView scan_train_args(const std::vector<std::string>& args);
/// Refuses --session and --collector among the train arguments (the launcher owns both), saying where they go.
void check_train_args(const TrainArgsView& train);

struct LaunchPlan {
  std::vector<RankSpec> ranks;
  bool cpu = false;
  std::vector<int> device_ids;     ///< GPU mode: one per rank
  std::string master_addr;
  int master_port = kDefaultMasterPort;
  std::vector<std::string> notes;  ///< one-line messages to print before starting
  TrainArgsView train;
};

/// Resolves devices and builds every rank's command and environment. Throws LaunchError with
/// the flag and the remedy when the flags contradict each other or the machine lacks GPUs.
LaunchPlan make_launch_plan(const LaunchRequest& request);

/// Points every rank at the run's collector: `--collector ADDRESS` on its command line, and the rank's
/// own key (sessions::rank_key of the run's secret) on descriptor 3, named by
/// SHARDSCOPE_COLLECTOR_KEY_FD: never on a command line, never in an environment.
void attach_session(LaunchPlan& plan, const std::string& collector_address, const std::string& secret);

/// Logical CPUs this process may run on (its affinity mask), at least 1.
int available_cpus();

}  // namespace shardscope::launcher
