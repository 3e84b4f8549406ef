#pragma once
// Runs the built `shardscope` binary as a user would, capturing exit code, stdout and stderr.

#include <string>
#include <vector>

namespace shardscope::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs SHARDSCOPE_CLI_PATH with `args` (no shell), optional extra environment "K=V" entries.
ProcessResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
/// Runs `argv` (argv[0] an executable path, no shell) the same way.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

}  // namespace shardscope::testing
