#pragma once
// Real hosts for the multi-host tests: scripts/ci_netns.sh makes network namespaces (one per
// host, each with its own host name and OpenSSH server) joined by a bridge, and removes them at
// the end. Commands run "on" host k through `ip netns exec`. The tests skip, saying why, only when
// this machine forbids namespaces.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::test {

struct CommandResult {
  int exit_code = -1;  ///< as a shell reports it: 128 + signal when killed
  std::string out, err;
};

class HostNamespaces {
 public:
  /// Makes `hosts` hosts named after this process; `skip_reason()` says why when it cannot.
  explicit HostNamespaces(int hosts);
  ~HostNamespaces();
  HostNamespaces(const HostNamespaces&) = delete;
  HostNamespaces& operator=(const HostNamespaces&) = delete;

  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& name() const { return name_; }
  /// The addresses of the hosts, host 1 first.
  const std::vector<std::string>& hosts() const { return hosts_; }
  std::string address(int host) const { return hosts_.at(static_cast<std::size_t>(host - 1)); }
  std::string ns(int host) const { return name_ + "-h" + std::to_string(host); }
  const std::string& ssh_config() const { return ssh_config_; }
  const std::string& hostfile() const { return hostfile_; }
  /// The veth end of `host` in the switch namespace (link down = the host's cable pulled).
  std::string switch_port(int host) const;

  /// Runs argv on `host` (1-based), waiting for it; `env` adds "K=V" entries.
  CommandResult run(int host, const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) const;
  /// The net namespace inode of `host` (what /proc/PID/ns/net links to for its processes).
  std::string net_namespace_id(int host) const;

 private:
  std::string name_, dir_, skip_reason_, ssh_config_, hostfile_;
  std::vector<std::string> hosts_;
};

/// A command running in the background on a host, its output in files.
class BackgroundCommand {
 public:
  BackgroundCommand(const HostNamespaces& hosts, int host, const std::vector<std::string>& argv,
                    const std::vector<std::string>& env, const std::string& output_prefix);
  ~BackgroundCommand();
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const;
  std::string err() const;
  /// Waits until `ready(out, err)` holds; false after `seconds` or when the command ended.
  bool wait_until(const std::function<bool(const std::string&, const std::string&)>& ready, double seconds);
  /// The exit code (128 + signal when killed), waiting at most `seconds`; nullopt if still running.
  std::optional<int> wait(double seconds);

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

/// Every shardscope process (launchers, agents, ranks), with its net namespace inode.
struct ProcessInfo {
  pid_t pid = 0;
  std::string cmdline;      ///< arguments joined by spaces
  std::string net_ns;       ///< readlink of /proc/PID/ns/net
};
std::vector<ProcessInfo> shardscope_processes();
/// The command lines of every process (for the "nothing in ps" check).
std::vector<ProcessInfo> all_processes();

}  // namespace shardscope::test
