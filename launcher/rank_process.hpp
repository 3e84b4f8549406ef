#pragma once
// One rank (or one transport to a node agent) as a child process: its own process group (so a
// signal to the group reaches anything it started), stdout and stderr on pipes the launcher reads,
// stdin from /dev/null or a pipe, and PR_SET_PDEATHSIG so a launcher killed outright does not leave
// it running.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace shardscope::launcher {

struct RankCommand {
  std::string program;            ///< path of the executable
  std::vector<std::string> argv;  ///< argv[0] included
  std::vector<std::string> env;   ///< the whole environment, "KEY=VALUE"
  bool stdin_pipe = false;        ///< stdin from a pipe the launcher writes (ssh to a node agent), not /dev/null
  /// Bytes the child reads from descriptor sessions::kCollectorKeyFd (3) up to its end: the rank's
  /// collector key, handed over outside its environment. Empty: no descriptor 3.
  std::string key_handover;
};

class RankProcess {
 public:
  /// Starts the command; throws LaunchError(kEnvironment) naming the program when exec fails:
  /// "cannot start <what> <program>: <reason>".
  static RankProcess spawn(const RankCommand& command, const std::string& what = "rank program");

  RankProcess(RankProcess&& other) noexcept;
  RankProcess& operator=(RankProcess&& other) noexcept;
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;
  /// Closes the pipes; kills and reaps the group if it still runs (never leaves a process behind).
  ~RankProcess();

  pid_t pid() const { return pid_; }
  /// Read ends (non-blocking), -1 once closed.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  /// The write end of its stdin (non-blocking) with RankCommand::stdin_pipe, else -1.
  int stdin_fd() const { return stdin_fd_; }
  void close_stdin();
  /// A pidfd that polls readable when the process exits, or -1 where the kernel has none.
  int exit_fd() const { return exit_fd_; }
  void close_stdout();
  void close_stderr();

  /// Sends `signal` to the rank's process group; a group already gone is not an error.
  void signal_group(int signal) const;
  /// If the rank has exited: kills what is left of its group, reaps it, and returns the wait
  /// status. nullopt while it runs; the status again on later calls.
  std::optional<int> try_reap();
  bool exited() const { return status_.has_value(); }

 private:
  RankProcess() = default;
  void release();

  pid_t pid_ = -1;
  int stdout_fd_ = -1, stderr_fd_ = -1, stdin_fd_ = -1, exit_fd_ = -1;
  std::optional<int> status_;
};

/// "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int status);
/// The exit code as sessions record it: the code, or minus the signal number.
int session_exit_code(int status);
/// "SIGKILL" for 9; "signal 42" for one without a name.
std::string signal_name(int signal);

}  // namespace shardscope::launcher
