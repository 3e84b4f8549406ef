#include "tests/app/cli_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

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

std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

ProcessResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
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
  std::vector<std::string> argv_storage{SHARDSCOPE_CLI_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const auto argv = null_terminated(argv_storage);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  const auto envp = null_terminated(env_storage);
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

RunningCli::RunningCli(const std::vector<std::string>& args, const test::TempDir& dir)
    : out_path_(dir.file("launcher.out")), err_path_(dir.file("launcher.err")) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> storage{SHARDSCOPE_CLI_PATH};
  storage.insert(storage.end(), args.begin(), args.end());
  const auto argv = null_terminated(storage);
  if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

RunningCli::~RunningCli() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string RunningCli::out() const { return slurp(out_path_); }
std::string RunningCli::err() const { return slurp(err_path_); }

bool RunningCli::wait_until(const std::function<bool(const std::string&, const std::string&)>& ready,
                            double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready(out(), err())) return true;
    if (::waitpid(pid_, nullptr, WNOHANG | WNOWAIT) == pid_) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int RunningCli::wait() {
  if (!exit_code_) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return *exit_code_;
}

std::optional<int> RunningCli::wait_for(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!exit_code_ && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

pid_t rank_pid(const std::string& launcher_err, int rank) {
  const std::regex pattern("rank " + std::to_string(rank) + " pid ([0-9]+)");
  std::smatch m;
  return std::regex_search(launcher_err, m, pattern) ? static_cast<pid_t>(std::stoi(m[1].str())) : -1;
}

}  // namespace shardscope::testing
