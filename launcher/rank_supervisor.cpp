#include "launcher/rank_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ostream>
#include <stdexcept>

#include "launcher/launch_error.hpp"
#include "launcher/signal_routing.hpp"

namespace shardscope::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// After the last rank exits, how long the pipes may stay open (held by a process that left the
// rank's group with setsid) before the launcher stops reading them.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
// Without pidfds (kernels before 5.3) exits are noticed by polling this often.
constexpr int kReapPollMs = 20;
// How often on_tick (the run doctor) is asked whether the run must stop.
constexpr auto kTickPeriod = std::chrono::seconds(1);

bool failed(int wait_status) { return !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0); }

int ms_until(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, 60000));
}

}  // namespace

struct RankSupervisor::State {
  std::vector<RankProcess> processes;
  std::vector<RankOutput> outputs;
  std::vector<RankResult> results;
  Clock::time_point started = Clock::now();
  std::optional<Clock::time_point> kill_deadline;   ///< set while stopping: SIGKILL when it passes
  std::optional<Clock::time_point> drain_deadline;  ///< set once every rank has exited
  Clock::time_point next_tick = Clock::now() + kTickPeriod;
  std::string stopped_hung;
  bool stopping = false;
  bool killed = false;
  int interrupt_signal = 0;
  std::optional<std::size_t> first_failed;

  bool all_exited() const {
    return std::all_of(processes.begin(), processes.end(), [](const RankProcess& p) { return p.exited(); });
  }
  bool pipes_open() const {
    return std::any_of(processes.begin(), processes.end(),
                       [](const RankProcess& p) { return p.stdout_fd() >= 0 || p.stderr_fd() >= 0; });
  }
};

int shell_exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

RankSupervisor::RankSupervisor(SupervisorOptions options) : options_(std::move(options)) {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
    throw LaunchError(LaunchError::Kind::kEnvironment, "cannot create the launcher's wake-up pipe");
  wake_read_ = wake[0];
  wake_write_ = wake[1];
}

RankSupervisor::~RankSupervisor() {
  ::close(wake_read_);
  ::close(wake_write_);
}

void RankSupervisor::request_stop(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] const auto written = ::write(wake_write_, &byte, 1);
}

void RankSupervisor::message(const std::string& text, sessions::LogLevel level) {
  if (options_.err) *options_.err << options_.voice.speaker << ": " << text << std::endl;
  if (options_.on_line) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    options_.on_line(sessions::LogLine{-1, now, level, text});
  }
}

void RankSupervisor::start_ranks(State& state) {
  const int world = static_cast<int>(options_.ranks.size());
  const std::string prefix = options_.each_rank_log_dir ? prepare_rank_log_dir(*options_.each_rank_log_dir) : "";
  for (const auto& spec : options_.ranks) {
    RankOutputOptions o;
    o.world_size = world;
    o.out = options_.out;
    o.err = options_.err;
    if (options_.each_rank_log_dir) o.log_path = rank_log_path(*options_.each_rank_log_dir, prefix, spec.rank);
    o.on_line = options_.on_line;
    state.outputs.emplace_back(spec.rank, std::move(o));
  }
  std::vector<StartedRank> started;
  for (const auto& spec : options_.ranks) {
    // A failure kills those started.
    state.processes.push_back(RankProcess::spawn(spec.command, program_noun(options_.voice)));
    state.results.push_back({spec.rank, state.processes.back().pid(), 0, 0, false});
    started.push_back({spec.rank, spec.local_rank, state.processes.back().pid(), spec.device});
  }
  if (options_.on_started) options_.on_started(started);
}

SupervisorResult RankSupervisor::run() {
  if (options_.ranks.empty()) throw LaunchError(LaunchError::Kind::kUsage, "no rank to start");
  SignalRouting routing(options_.handle_signals ? wake_write_ : -1);
  State state;
  start_ranks(state);
  while (!state.all_exited() || state.pipes_open()) {
    if (state.all_exited() && !state.drain_deadline) state.drain_deadline = Clock::now() + kDrainTimeout;
    if (state.drain_deadline && Clock::now() >= *state.drain_deadline) break;
    wait_for_events(state);
    handle_exits(state);
    tick(state);
    if (state.kill_deadline && !state.killed && Clock::now() >= *state.kill_deadline) {
      message(grace_over_message(options_.voice, static_cast<int>(options_.grace_seconds)), sessions::LogLevel::kWarning);
      stop_all(state, SIGKILL);
    }
  }
  for (std::size_t i = 0; i < state.processes.size(); ++i) {
    if (state.processes[i].stdout_fd() >= 0) state.outputs[i].finish(false);
    if (state.processes[i].stderr_fd() >= 0) state.outputs[i].finish(true);
  }
  return finish(state);
}

void RankSupervisor::wait_for_events(State& state) {
  std::vector<pollfd> fds{{wake_read_, POLLIN, 0}};
  struct Source {
    std::size_t rank_index;
    int kind;  // 0 stdout, 1 stderr, 2 exit
  };
  std::vector<Source> sources{{0, -1}};
  int timeout = -1;
  for (std::size_t i = 0; i < state.processes.size(); ++i) {
    const auto& p = state.processes[i];
    const int fd_of_kind[3] = {p.stdout_fd(), p.stderr_fd(), p.exited() ? -1 : p.exit_fd()};
    for (int kind = 0; kind < 3; ++kind)
      if (fd_of_kind[kind] >= 0) {
        fds.push_back({fd_of_kind[kind], POLLIN, 0});
        sources.push_back({i, kind});
      }
    if (!p.exited() && p.exit_fd() < 0) timeout = kReapPollMs;
  }
  const std::optional<Clock::time_point> tick_at =
      options_.on_tick && !state.stopping ? std::optional<Clock::time_point>(state.next_tick) : std::nullopt;
  for (const auto& deadline : {state.killed ? std::nullopt : state.kill_deadline, state.drain_deadline, tick_at})
    if (deadline) timeout = timeout < 0 ? ms_until(*deadline) : std::min(timeout, ms_until(*deadline));
  if (::poll(fds.data(), fds.size(), timeout) < 0) return;  // EINTR: the signal is in the wake pipe
  for (std::size_t k = 0; k < fds.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (sources[k].kind == -1) {
      unsigned char signals[64];
      ssize_t n = 0;
      while ((n = ::read(wake_read_, signals, sizeof signals)) > 0)
        for (ssize_t s = 0; s < n; ++s) handle_signal(state, signals[s]);
    } else if (sources[k].kind < 2) {
      read_output(state, sources[k].rank_index, sources[k].kind == 1);
    }
  }
}

void RankSupervisor::read_output(State& state, std::size_t index, bool from_stderr) {
  auto& process = state.processes[index];
  char buffer[64 << 10];
  // At most 1 MiB per wake-up, so one chatty rank cannot starve the others.
  for (int turn = 0; turn < 16; ++turn) {
    const int fd = from_stderr ? process.stderr_fd() : process.stdout_fd();
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      state.outputs[index].write(from_stderr, buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    state.outputs[index].finish(from_stderr);  // end of file, or a broken pipe
    from_stderr ? process.close_stderr() : process.close_stdout();
    return;
  }
}

void RankSupervisor::stop_all(State& state, int signal) {
  for (auto& p : state.processes) p.signal_group(signal);
  if (signal == SIGKILL) {
    state.killed = true;
    return;
  }
  if (!state.stopping) {
    state.stopping = true;
    state.kill_deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long long>(options_.grace_seconds * 1000));
    for (std::size_t i = 0; i < state.processes.size(); ++i)
      if (!state.processes[i].exited()) state.results[i].stopped_by_launcher = true;
  }
}

void RankSupervisor::handle_signal(State& state, int signal) {
  if (signal != SIGINT && signal != SIGTERM) return;
  if (state.stopping) {
    // A second Ctrl-C (or a signal while a failure is being handled): do not wait out the grace.
    message(kill_now_message(options_.voice, signal), sessions::LogLevel::kWarning);
    stop_all(state, SIGKILL);
    return;
  }
  state.interrupt_signal = signal;
  message(forwarding_message(options_.voice, signal, static_cast<int>(options_.grace_seconds)),
          sessions::LogLevel::kWarning);
  stop_all(state, signal);
}

void RankSupervisor::handle_exits(State& state) {
  std::vector<std::size_t> exited;
  for (std::size_t i = 0; i < state.processes.size(); ++i) {
    if (state.processes[i].exited()) continue;
    if (auto status = state.processes[i].try_reap()) {
      state.results[i].wait_status = *status;
      state.results[i].exit_code = session_exit_code(*status);
      exited.push_back(i);
    }
  }
  // Ranks seen exiting together: one killed by a signal is the likelier cause (its peers then fail
  // on a broken connection), then the lowest rank.
  std::stable_sort(exited.begin(), exited.end(), [&](std::size_t a, std::size_t b) {
    return WIFSIGNALED(state.results[a].wait_status) && !WIFSIGNALED(state.results[b].wait_status);
  });
  for (std::size_t i : exited) {
    if (options_.on_rank_exit) options_.on_rank_exit(state.results[i]);
    const int status = state.results[i].wait_status;
    if (!failed(status) || state.stopping) continue;
    state.first_failed = i;
    message(failure_message(options_.voice, state.results[i].rank, state.results[i].pid, status),
            sessions::LogLevel::kError);
    stop_all(state, SIGTERM);
  }
}

void RankSupervisor::tick(State& state) {
  if (!options_.on_tick || state.stopping || Clock::now() < state.next_tick) return;
  state.next_tick = Clock::now() + kTickPeriod;
  std::string why = options_.on_tick();
  if (why.empty()) return;
  message(why, sessions::LogLevel::kError);
  state.stopped_hung = std::move(why);
  stop_all(state, SIGTERM);
}

SupervisorResult RankSupervisor::finish(State& state) {
  SupervisorResult r;
  r.ranks = state.results;
  r.interrupt_signal = state.interrupt_signal;
  r.killed_after_grace = state.killed;
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - state.started).count();
  if (state.first_failed) {
    const auto& failed_rank = state.results[*state.first_failed];
    r.first_failed_rank = failed_rank.rank;
    r.first_failure =
        supervised_name(options_.voice, failed_rank.rank) + " " + describe_wait_status(failed_rank.wait_status);
    const auto& tail = state.outputs[*state.first_failed].stderr_tail();
    r.first_failure_stderr.assign(tail.begin(), tail.end());
    r.status = "failed";
    r.exit_code = shell_exit_code(failed_rank.wait_status);
  } else if (!state.stopped_hung.empty()) {
    r.status = "hung";
    r.exit_code = kHungRunExitCode;
    r.stopped_hung = state.stopped_hung;
  } else if (state.interrupt_signal) {
    r.status = "interrupted";
    r.exit_code = 128 + state.interrupt_signal;
  } else {
    r.status = "completed";
  }
  return r;
}

}  // namespace shardscope::launcher
