#include "launcher/node_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "configs/shell_words.hpp"
#include "launcher/launch_error.hpp"

namespace shardscope::launcher {
namespace {

// DeepSpeed's PDSH_MAX_FAN_OUT.
constexpr int kPdshFanOut = 1024;

std::string env_value(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& e : env)
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=') return e.substr(key.size() + 1);
  return "";
}

void set_env(std::vector<std::string>& env, const std::string& key, const std::string& value) {
  env.erase(std::remove_if(env.begin(), env.end(),
                           [&](const std::string& e) { return e.compare(0, key.size() + 1, key + "=") == 0; }),
            env.end());
  env.push_back(key + "=" + value);
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : separator) + p;
  return text;
}

std::string program_or_fail(NodeLauncher launcher, const std::string& program, const std::vector<std::string>& env,
                            const std::string& package) {
  const std::string path = find_program(program, env_value(env, "PATH"));
  if (path.empty())
    throw LaunchError(LaunchError::Kind::kEnvironment,
                      std::string("launcher '") + node_launcher_name(launcher) + "' not installed. (" + program +
                          " is not in PATH; install " + package + ", or pick another --launcher)");
  return path;
}

// The remote command line: the agent, at the launcher's own path.
std::string agent_command(const TransportOptions& o, const std::vector<std::string>& extra) {
  std::string command = "exec " + shell_quote(o.agent_program) + " node";
  for (const auto& arg : extra) command += " " + arg;
  return command;
}

TransportProcess ssh_process(const TransportOptions& o, const std::vector<std::string>& env, std::size_t node) {
  TransportProcess p;
  p.node = static_cast<int>(node);
  p.what = "ssh to " + o.hosts[node];
  p.command.program = program_or_fail(o.launcher, "ssh", env, "openssh-client");
  p.command.argv = {p.command.program};
  for (const auto& option : ssh_options(o)) p.command.argv.push_back(option);
  p.command.argv.insert(p.command.argv.end(), o.launcher_args.begin(), o.launcher_args.end());
  p.command.argv.push_back(o.hosts[node]);
  p.command.argv.push_back(agent_command(o, {}));
  p.command.env = env;
  p.command.stdin_pipe = true;  // the job and the launcher's messages
  return p;
}

TransportProcess pdsh_process(const TransportOptions& o, std::vector<std::string> env) {
  TransportProcess p;
  p.what = "pdsh";
  p.command.program = program_or_fail(o.launcher, "pdsh", env, "pdsh");
  set_env(env, "PDSH_RCMD_TYPE", "ssh");
  const std::string appended = env_value(env, "PDSH_SSH_ARGS_APPEND");
  set_env(env, "PDSH_SSH_ARGS_APPEND", (appended.empty() ? "" : appended + " ") + joined(ssh_options(o), " "));
  p.command.argv = {p.command.program, "-S", "-f", std::to_string(kPdshFanOut), "-w", joined(o.hosts, ",")};
  p.command.argv.insert(p.command.argv.end(), o.launcher_args.begin(), o.launcher_args.end());
  // pdsh puts each host's name for %h: the agent tells the launcher which host it is.
  p.command.argv.push_back(agent_command(o, {"--connect", o.connect_address, "--host", "%h"}));
  p.command.env = std::move(env);
  return p;
}

TransportProcess mpirun_process(const TransportOptions& o, std::vector<std::string> env) {
  TransportProcess p;
  p.what = "mpirun";
  p.command.program = program_or_fail(o.launcher, "mpirun", env, "openmpi-bin");
  program_or_fail(o.launcher, "ompi_info", env, "openmpi-bin");  // DeepSpeed's backend_exists() check
  const std::string rsh_args = env_value(env, "OMPI_MCA_plm_rsh_args");
  set_env(env, "OMPI_MCA_plm_rsh_args", (rsh_args.empty() ? "" : rsh_args + " ") + joined(ssh_options(o), " "));
  // One agent per host, in the hostfile's order (rank k of the job is node k).
  p.command.argv = {p.command.program, "-n", std::to_string(o.hosts.size()), "--hostfile", o.mpi_hostfile,
                    "--map-by", "node", "--bind-to", "none"};
  p.command.argv.insert(p.command.argv.end(), o.launcher_args.begin(), o.launcher_args.end());
  p.command.argv.insert(p.command.argv.end(), {o.agent_program, "node", "--connect", o.connect_address});
  p.command.env = std::move(env);
  return p;
}

TransportProcess srun_process(const TransportOptions& o, const std::vector<std::string>& env) {
  TransportProcess p;
  p.what = "srun";
  p.command.program = program_or_fail(o.launcher, "srun", env, "slurm-client");
  if (env_value(env, "SLURM_JOB_ID").empty())
    throw LaunchError(LaunchError::Kind::kEnvironment,
                      "--launcher slurm starts the node agents with srun inside a Slurm allocation, but SLURM_JOB_ID "
                      "is not set: run the launch inside `salloc -N " + std::to_string(o.hosts.size()) +
                          "` or an sbatch script");
  const std::string count = std::to_string(o.hosts.size());
  p.command.argv = {p.command.program, "--nodes=" + count, "--ntasks=" + count, "--ntasks-per-node=1",
                    "--nodelist=" + joined(o.hosts, ","), "--kill-on-bad-exit=0"};
  p.command.argv.insert(p.command.argv.end(), o.launcher_args.begin(), o.launcher_args.end());
  // Each task finds its host in SLURMD_NODENAME, which the agent reports as its identity.
  p.command.argv.insert(p.command.argv.end(), {o.agent_program, "node", "--connect", o.connect_address});
  p.command.env = env;
  return p;
}

}  // namespace

NodeLauncher parse_node_launcher(const std::string& name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "ssh") return NodeLauncher::kSsh;
  if (lower == "pdsh") return NodeLauncher::kPdsh;
  if (lower == "openmpi") return NodeLauncher::kOpenMpi;
  if (lower == "slurm") return NodeLauncher::kSlurm;
  throw LaunchError(LaunchError::Kind::kUsage,
                    "--launcher " + name + ": Unknown launcher " + name + "; ShardScope starts node agents with ssh "
                    "(the default), pdsh, openmpi or slurm (DeepSpeed's mpich, impi and mvapich are not supported)");
}

const char* node_launcher_name(NodeLauncher launcher) {
  switch (launcher) {
    case NodeLauncher::kPdsh: return "pdsh";
    case NodeLauncher::kOpenMpi: return "openmpi";
    case NodeLauncher::kSlurm: return "slurm";
    case NodeLauncher::kSsh: break;
  }
  return "ssh";
}

bool connects_back(NodeLauncher launcher) { return launcher != NodeLauncher::kSsh; }

std::vector<std::string> ssh_options(const TransportOptions& o) {
  std::vector<std::string> options = {"-o", "BatchMode=yes",
                                      "-o", "ServerAliveInterval=" + std::to_string(o.keepalive_interval_s),
                                      "-o", "ServerAliveCountMax=" + std::to_string(o.keepalive_count),
                                      "-o", "ConnectTimeout=" + std::to_string(o.connect_timeout_s)};
  if (o.ssh_port) options.insert(options.end(), {"-p", std::to_string(*o.ssh_port)});
  return options;
}

std::vector<TransportProcess> transport_processes(const TransportOptions& o, const std::vector<std::string>& env) {
  switch (o.launcher) {
    case NodeLauncher::kPdsh: return {pdsh_process(o, env)};
    case NodeLauncher::kOpenMpi: return {mpirun_process(o, env)};
    case NodeLauncher::kSlurm: return {srun_process(o, env)};
    case NodeLauncher::kSsh: break;
  }
  std::vector<TransportProcess> processes;
  for (std::size_t node = 0; node < o.hosts.size(); ++node) processes.push_back(ssh_process(o, env, node));
  return processes;
}

std::vector<std::string> split_launcher_args(const std::string& text) {
  try {
    return configs::split_shell_words(text);
  } catch (const configs::UnclosedQuoteError&) {
    throw LaunchError(LaunchError::Kind::kUsage, "--launcher_args '" + text + "': No closing quotation");
  }
}

std::string find_program(const std::string& program, const std::string& path_variable) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  std::istringstream in(path_variable.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_variable);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace shardscope::launcher
