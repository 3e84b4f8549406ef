#pragma once
// What the launcher asks one host's node agent to do (`shardscope node`), and the messages they
// exchange. The job travels on the agent's private channel (ssh's stdin, or the sealed TCP channel
// of agent_channel.hpp), never on a command line: it holds the environment and the run's secret.
// Messages are JSON objects with a "type"; docs/launcher.md ("Node agents") lists them.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "launcher/environment_exports.hpp"
#include "launcher/launch_plan.hpp"

namespace shardscope::launcher {

struct NodeJob {
  std::string kind = "train";       ///< "train": start the ranks; "probe": report the host's facts only
  std::string host;                 ///< the node's name in the hostfile (how messages name it)
  int node_rank = 0;
  int node_count = 1;
  int first_rank = 0;               ///< global rank of this node's first rank
  int world_size = 1;
  std::vector<int> slots;           ///< GPU ids; CPU ranks: one rank per entry
  bool cpu = false;
  std::string master_addr;
  int master_port = 29500;
  std::string rank_command = "train";        ///< the shardscope subcommand every rank runs
  std::vector<std::string> rank_args;         ///< its arguments (the launch's train arguments)
  std::optional<std::string> collector;      ///< "ADDR:PORT" passed to every rank with --collector
  EnvironmentPairs environment;              ///< set on every rank (exports, the run's secret)
  std::string cwd;                           ///< the ranks' working directory (the launcher's)
  std::optional<std::string> each_rank_log_dir;
  double grace_seconds = 10;                 ///< SIGTERM to SIGKILL
  double launcher_timeout_s = 15;            ///< nothing heard from the launcher this long: stop
};

/// The local launch of a job's ranks (the agent's, and a --no_ssh node's): its ranks with their
/// global numbers, devices or CPU ranks, and every variable of the job but the secret (which
/// attach_session() adds next to --collector).
LaunchRequest launch_request_for(const NodeJob& job, const std::string& program);
/// The run's secret among the job's variables ("" when the run records no session).
std::string job_secret(const NodeJob& job);

/// The JSON of a job ({"type": "job", ...}) and back; job_from_json throws std::invalid_argument
/// naming the missing or mistyped field.
nlohmann::json job_to_json(const NodeJob& job);
NodeJob job_from_json(const nlohmann::json& message);

/// A message of `type` with nothing else in it yet.
nlohmann::json message_of(const char* type);

/// What the agent's host has, for the preflight table (the probe job's answer).
struct HostFacts {
  std::string hostname;
  std::string shardscope_version;
  std::string git_hash;
  int gpu_count = 0;
  std::vector<std::string> gpu_models;      ///< one per GPU, as nvidia-smi -L names them
  std::optional<double> shm_bytes;          ///< size of /dev/shm
  int logical_cores = 0;
  bool master_port_free = true;             ///< MASTER_PORT can be bound on this host's run address
  std::string run_address;                  ///< the address this host uses towards MASTER_ADDR
  std::optional<int> free_port_near;        ///< a free port above MASTER_PORT when it is taken
};

nlohmann::json facts_to_json(const HostFacts& facts);
HostFacts facts_from_json(const nlohmann::json& message);

/// Probes this machine for `job` (its master address and port).
HostFacts probe_host_facts(const NodeJob& job);

}  // namespace shardscope::launcher
