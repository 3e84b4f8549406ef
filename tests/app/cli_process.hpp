#pragma once
// Runs the built `shardscope` binary as a user would, capturing exit code, stdout and stderr.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/engine/temp_dir.hpp"

namespace shardscope::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Pointers to `strings` followed by a null pointer, as execve and posix_spawn take them.
std::vector<char*> null_terminated(std::vector<std::string>& strings);

/// Runs SHARDSCOPE_CLI_PATH with `args` (no shell), optional extra environment "K=V" entries.
ProcessResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

/// `shardscope` running in the background, its output in files of `dir` the test can watch
/// (launcher.out, launcher.err). Killed (SIGKILL) and reaped on destruction if still running.
class RunningCli {
 public:
  RunningCli(const std::vector<std::string>& args, const test::TempDir& dir);
  ~RunningCli();
  RunningCli(const RunningCli&) = delete;
  RunningCli& operator=(const RunningCli&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const;
  std::string err() const;
  /// Waits until `ready(stdout, stderr)` holds; false after `seconds` or when the process ended.
  bool wait_until(const std::function<bool(const std::string&, const std::string&)>& ready, double seconds);
  /// Waits for the exit; the exit code as a shell reports it (128 + signal when killed).
  int wait();
  /// Like wait(), but gives up after `seconds` (nullopt: still running).
  std::optional<int> wait_for(double seconds);

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

/// The pid the launcher printed for `rank` ("rank 1 pid 1234 (cpu)"), or -1.
pid_t rank_pid(const std::string& launcher_err, int rank);

}  // namespace shardscope::testing
