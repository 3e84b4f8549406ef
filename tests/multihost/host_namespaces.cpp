#include "tests/multihost/host_namespaces.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace shardscope::test {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kScript = std::string(SHARDSCOPE_SOURCE_DIR) + "/scripts/ci_netns.sh";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& x : extra) {
    const std::string key = x.substr(0, x.find('=') + 1);
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(key, 0) == 0; }),
              env.end());
    env.push_back(x);
  }
  return env;
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& out,
            const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = argv, vars = env;
  std::vector<char*> a, e;
  for (auto& s : args) a.push_back(s.data());
  a.push_back(nullptr);
  for (auto& s : vars) e.push_back(s.data());
  e.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, a[0], &actions, nullptr, a.data(), e.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

int shell_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string temp_file(const std::string& stem) {
  const char* base = std::getenv("TMPDIR");
  return std::string(base && *base ? base : "/tmp") + "/shardscope_multihost_" + std::to_string(::getpid()) + "_" + stem;
}

CommandResult run_here(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  static int counter = 0;
  const std::string out = temp_file("out" + std::to_string(++counter)), err = temp_file("err" + std::to_string(counter));
  CommandResult r;
  const pid_t pid = spawn(argv, environment_with(env), out, err);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid) r.exit_code = shell_code(status);
  r.out = slurp(out);
  r.err = slurp(err);
  ::unlink(out.c_str());
  ::unlink(err.c_str());
  return r;
}

std::string value_of(const std::string& env_file, const std::string& key) {
  std::istringstream in(env_file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + "=", 0) == 0) {
      std::string value = line.substr(key.size() + 1);
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      return value;
    }
  return "";
}

}  // namespace

HostNamespaces::HostNamespaces(int hosts) : name_("ss" + std::to_string(::getpid())) {
  const auto check = run_here({"/bin/bash", kScript, "check"});
  if (check.exit_code != 0) {
    skip_reason_ = "cannot make network namespaces here: " + check.out + check.err;
    return;
  }
  const auto up = run_here({"/bin/bash", kScript, "up", name_, std::to_string(hosts)});
  if (up.exit_code != 0) {
    skip_reason_.clear();
    throw std::runtime_error("scripts/ci_netns.sh up failed: " + up.err);
  }
  dir_ = up.out.substr(0, up.out.find('\n'));
  const std::string env = slurp(dir_ + "/env");
  std::istringstream addresses(value_of(env, "SS_NETNS_HOSTS"));
  for (std::string a; addresses >> a;) hosts_.push_back(a);
  ssh_config_ = value_of(env, "SS_NETNS_SSH_CONFIG");
  hostfile_ = value_of(env, "SS_NETNS_HOSTFILE");
}

HostNamespaces::~HostNamespaces() {
  if (!dir_.empty()) run_here({"/bin/bash", kScript, "down", name_});
}

std::string HostNamespaces::switch_port(int host) const { return name_.substr(0, 9) + "v" + std::to_string(host); }

CommandResult HostNamespaces::run(int host, const std::vector<std::string>& argv, const std::vector<std::string>& env) const {
  std::vector<std::string> full = {"/usr/sbin/ip", "netns", "exec", ns(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_here(full, env);
}

std::string HostNamespaces::net_namespace_id(int host) const {
  const auto r = run(host, {"/bin/sh", "-c", "readlink /proc/self/ns/net"});
  return r.out.substr(0, r.out.find('\n'));
}

BackgroundCommand::BackgroundCommand(const HostNamespaces& hosts, int host, const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env, const std::string& output_prefix)
    : out_path_(output_prefix + ".out"), err_path_(output_prefix + ".err") {
  std::vector<std::string> full = {"/usr/sbin/ip", "netns", "exec", hosts.ns(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  pid_ = spawn(full, environment_with(env), out_path_, err_path_);
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string BackgroundCommand::out() const { return slurp(out_path_); }
std::string BackgroundCommand::err() const { return slurp(err_path_); }

bool BackgroundCommand::wait_until(const std::function<bool(const std::string&, const std::string&)>& ready,
                                   double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (ready(out(), err())) return true;
    if (exit_code_ || ::waitpid(pid_, nullptr, WNOHANG | WNOWAIT) == pid_) return ready(out(), err());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::optional<int> BackgroundCommand::wait(double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!exit_code_) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = shell_code(status);
      break;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exit_code_;
}

std::vector<ProcessInfo> all_processes() {
  std::vector<ProcessInfo> processes;
  DIR* proc = ::opendir("/proc");
  if (!proc) return processes;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp("/proc/" + name + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    char ns[128] = {};
    const ssize_t n = ::readlink(("/proc/" + name + "/ns/net").c_str(), ns, sizeof ns - 1);
    processes.push_back({static_cast<pid_t>(std::stoi(name)), cmdline, n > 0 ? std::string(ns, static_cast<std::size_t>(n)) : ""});
  }
  ::closedir(proc);
  return processes;
}

std::vector<ProcessInfo> shardscope_processes() {
  std::vector<ProcessInfo> found;
  for (auto& p : all_processes())
    // Ranks run as /proc/self/exe (the very build that launched them).
    if (p.cmdline.find("/shardscope ") != std::string::npos || p.cmdline.rfind("/proc/self/exe ", 0) == 0)
      found.push_back(std::move(p));
  return found;
}

}  // namespace shardscope::test
