#include "launcher/rank_process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "launcher/launch_error.hpp"

namespace shardscope::launcher {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Every descriptor from `first` up except `keep` (the exec-status pipe, above `first`): a rank must
// not hold the collector's sockets or another rank's pipes open.
void close_other_descriptors(int first, int keep) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), static_cast<unsigned>(keep - 1), 0u) == 0 &&
      ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0)
    return;
#endif
  for (int fd = first; fd < 4096; ++fd)
    if (fd != keep) ::close(fd);
}

// Puts the key pipe's read end on descriptor 3 for the exec'd rank (status_fd moved out of its way
// first) and returns the first descriptor to close; async-signal-safe.
int place_key_descriptor(int key_fd, int& status_fd) {
  if (key_fd < 0) return 3;
  if (status_fd <= 3) status_fd = ::fcntl(status_fd, F_DUPFD_CLOEXEC, 4);
  if (key_fd != 3) ::dup2(key_fd, 3);
  ::fcntl(3, F_SETFD, 0);  // survives exec (dup2 clears close-on-exec; key_fd == 3 kept it)
  return 4;
}

// Runs in the child between fork and exec: async-signal-safe calls only (the launcher has threads).
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp, int in_fd, int out_fd,
                             int err_fd, int status_fd, int key_fd, pid_t launcher) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl took effect
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  // Ignored signals survive exec; a rank must die of Ctrl-C even if the launcher ran under nohup.
  for (int s : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE, SIGCHLD}) ::sigaction(s, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int stdin_source = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY);
  if (stdin_source >= 0) ::dup2(stdin_source, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  close_other_descriptors(place_key_descriptor(key_fd, status_fd), status_fd);
  ::execve(program, argv, envp);
  const int error = errno;
  [[maybe_unused]] const auto written = ::write(status_fd, &error, sizeof error);
  ::_exit(127);
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

LaunchError spawn_error(const std::string& what, const std::string& program, int error) {
  return LaunchError(LaunchError::Kind::kEnvironment, "cannot start " + what + " " + program + ": " + std::strerror(error));
}

// A pipe already holding `bytes` and closed for writing: the child reads them, then end of file.
// A key is far below a pipe's capacity (64 KiB), so the write never blocks.
int handover_pipe(const std::string& bytes) {
  int fds[2] = {-1, -1};
  if (bytes.empty()) return -1;
  if (bytes.size() > 4096 || ::pipe2(fds, O_CLOEXEC) != 0) return -2;
  const ssize_t n = ::write(fds[1], bytes.data(), bytes.size());
  ::close(fds[1]);
  if (n != static_cast<ssize_t>(bytes.size())) {
    ::close(fds[0]);
    return -2;
  }
  return fds[0];
}

}  // namespace

RankProcess RankProcess::spawn(const RankCommand& command, const std::string& what) {
  std::vector<char*> argv = c_strings(command.argv), envp = c_strings(command.env);
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1}, in[2] = {-1, -1};
  int key = handover_pipe(command.key_handover);
  if (key == -2 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0 ||
      (command.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0)) {
    const int error = errno;
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &status[0], &status[1], &in[0], &in[1], &key}) close_fd(*fd);
    throw spawn_error(what, command.program, error);
  }
  // Signals stay blocked across fork so the launcher's handlers never run in the child.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(command.program.c_str(), argv.data(), envp.data(), in[0], out[1], err[1], status[1], key, launcher);
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  for (int* fd : {&out[1], &err[1], &status[1], &in[0], &key}) close_fd(*fd);
  if (pid < 0) {
    for (int* fd : {&out[0], &err[0], &status[0], &in[1]}) close_fd(*fd);
    throw spawn_error(what, command.program, fork_error);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before the launcher signals it
  int exec_error = 0;
  ssize_t n = 0;
  do n = ::read(status[0], &exec_error, sizeof exec_error);
  while (n < 0 && errno == EINTR);
  close_fd(status[0]);
  RankProcess process;
  process.pid_ = pid;
  process.stdout_fd_ = out[0];
  process.stderr_fd_ = err[0];
  process.stdin_fd_ = in[1];
  if (n == static_cast<ssize_t>(sizeof exec_error))
    throw spawn_error(what, command.program, exec_error);  // ~RankProcess reaps the child
  for (int fd : {out[0], err[0], in[1]})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
#ifdef SYS_pidfd_open
  process.exit_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (process.exit_fd_ >= 0) ::fcntl(process.exit_fd_, F_SETFD, FD_CLOEXEC);
#endif
  return process;
}

RankProcess::RankProcess(RankProcess&& other) noexcept { *this = std::move(other); }

RankProcess& RankProcess::operator=(RankProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    stderr_fd_ = std::exchange(other.stderr_fd_, -1);
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    exit_fd_ = std::exchange(other.exit_fd_, -1);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

RankProcess::~RankProcess() { release(); }

void RankProcess::release() {
  if (pid_ > 0 && !status_) {
    signal_group(SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
  }
  close_stdout();
  close_stderr();
  close_stdin();
  close_fd(exit_fd_);
  pid_ = -1;
}

void RankProcess::close_stdin() { close_fd(stdin_fd_); }
void RankProcess::close_stdout() { close_fd(stdout_fd_); }
void RankProcess::close_stderr() { close_fd(stderr_fd_); }

void RankProcess::signal_group(int signal) const {
  if (pid_ > 0 && !status_) ::kill(-pid_, signal);
}

std::optional<int> RankProcess::try_reap() {
  if (status_ || pid_ <= 0) return status_;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
    return std::nullopt;
  // Still a zombie, so its pid (the group id) cannot be reused yet: clear the rest of the group.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = status;
  close_fd(exit_fd_);
  return status_;
}

std::string signal_name(int signal) {
  static const std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
      {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& [number, name] : kNames)
    if (number == signal) return name;
  return "signal " + std::to_string(signal);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    return "was killed by signal " + std::to_string(s) + " (" + signal_name(s) + ")" +
           (WCOREDUMP(status) ? ", core dumped" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

int session_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return status;
}

}  // namespace shardscope::launcher
