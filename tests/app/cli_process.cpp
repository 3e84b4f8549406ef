#include "tests/app/cli_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace shardscope::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

ProcessResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv{SHARDSCOPE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env);
}

ProcessResult run_process(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  char out_template[] = "/tmp/shardscope_cli_outXXXXXX";
  char err_template[] = "/tmp/shardscope_cli_errXXXXXX";
  const int out_fd = mkstemp(out_template);
  const int err_fd = mkstemp(err_template);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("mkstemp failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> argv_storage = args;
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_fd);
  close(err_fd);
  if (rc != 0) throw std::runtime_error(std::string("cannot start ") + argv[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_template);
  result.err = slurp(err_template);
  std::remove(out_template);
  std::remove(err_template);
  return result;
}

}  // namespace shardscope::testing
