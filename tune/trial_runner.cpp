#include "tune/trial_runner.hpp"

#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <optional>
#include <cstring>
#include <fstream>
#include <thread>

#include "tune/tune_error.hpp"

namespace shardscope::tune {
namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) { g_stop = 1; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool reads_like_error(const std::string& line) {
  const std::string l = lower(line);
  return l.find("error") != std::string::npos || l.find("failed") != std::string::npos ||
         l.find("exit code") != std::string::npos;
}

// The launcher's own verdict ("shardscope launch: error: ...", "... (the first rank to fail) ...")
// says what went wrong better than the last line that mentions an error, which may be a row of the
// closing summary ("log warnings / errors  1 / 6").
bool is_launcher_verdict(const std::string& line) {
  return line.rfind("shardscope launch: error:", 0) == 0 || line.find("(the first rank to fail)") != std::string::npos ||
         line.find("(the first failure)") != std::string::npos;
}

[[noreturn]] void exec_child(std::vector<std::string>& argv, const std::string& log_path, pid_t parent) {
  // Dies with the tuner; the launcher turns SIGTERM into a clean stop of every rank.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(143);  // the tuner died before prctl took effect
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
  }
  const int null_in = ::open("/dev/null", O_RDONLY);
  if (null_in >= 0) ::dup2(null_in, STDIN_FILENO);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  std::fprintf(stderr, "shardscope tune: cannot run %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

int shell_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Waits for `pid`; past the deadline, or when the tuner is asked to stop, sends SIGTERM, then
// SIGKILL after a grace period of 10 s.
int wait_for_trial(pid_t pid, double timeout_s, TrialProcessResult& r) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::optional<clock::time_point> terminated;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return shell_exit_code(status);
    if (done < 0 && errno != EINTR) return -1;
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    if (!terminated && (g_stop || (timeout_s > 0 && elapsed > timeout_s))) {
      (g_stop ? r.interrupted : r.timed_out) = true;
      ::kill(pid, SIGTERM);
      terminated = clock::now();
    } else if (terminated && clock::now() - *terminated > std::chrono::seconds(10)) {
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_stop != 0; }

bool is_out_of_memory_line(const std::string& line) {
  const std::string l = lower(line);
  for (const char* pattern : {"out of memory", "outofmemoryerror", "not enough memory", "can't allocate memory",
                              "std::bad_alloc", "cudaerrormemoryallocation"})
    if (l.find(pattern) != std::string::npos) return true;
  return false;
}

void scan_trial_log(const std::string& path, TrialProcessResult& r) {
  std::ifstream in(path);
  bool verdict = false;
  auto keep = [&](const std::string& line) { r.last_error = line.size() > 400 ? line.substr(0, 400) + "..." : line; };
  for (std::string line; std::getline(in, line);) {
    if (is_out_of_memory_line(line)) r.out_of_memory = true;
    if (!verdict && is_launcher_verdict(line)) {
      verdict = true;
      keep(line);
    } else if (!verdict && reads_like_error(line) && line.find("warnings / errors") == std::string::npos) {
      keep(line);
    }
  }
}

std::vector<std::string> trial_command(const TrialLaunch& launch, int master_port) {
  std::vector<std::string> argv{launch.shardscope, "launch"};
  argv.insert(argv.end(), launch.launch_flags.begin(), launch.launch_flags.end());
  const bool port_given = std::find(launch.launch_flags.begin(), launch.launch_flags.end(), "--master_port") !=
                          launch.launch_flags.end();
  if (!port_given) argv.insert(argv.end(), {"--master_port", std::to_string(master_port)});
  argv.insert(argv.end(), {"--session", launch.session_db, "--name", launch.session_name, "--", "--config",
                           launch.config_path, "--steps", std::to_string(launch.steps)});
  argv.insert(argv.end(), launch.train_args.begin(), launch.train_args.end());
  return argv;
}

TrialProcessResult run_trial_process(const TrialLaunch& launch) {
  std::vector<std::string> argv = trial_command(launch, free_loopback_port());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw TuneError(std::string("cannot start a trial (fork): ") + std::strerror(errno));
  if (pid == 0) exec_child(argv, launch.log_path, parent);
  TrialProcessResult r;
  r.exit_code = wait_for_trial(pid, launch.timeout_s, r);
  scan_trial_log(launch.log_path, r);
  return r;
}

std::string own_shardscope_executable() {
  char path[PATH_MAX] = {};
  if (!::realpath("/proc/self/exe", path)) throw TuneError("cannot find the running shardscope (/proc/self/exe)");
  return path;
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace shardscope::tune
