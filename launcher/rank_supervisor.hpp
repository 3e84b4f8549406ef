#pragma once
// The launcher's watch over its ranks, as DeepSpeed's launch.py keeps it, made exact: it starts
// every rank, relays their output, forwards SIGINT/SIGTERM to every rank's process group, and
// when one rank fails it stops the others (SIGTERM, then SIGKILL after a grace period) and
// reports which rank failed first and how. No rank, nor anything a rank started in its process
// group, outlives run().

#include <sys/types.h>

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "launcher/rank_output.hpp"
#include "launcher/rank_process.hpp"
#include "launcher/supervisor_voice.hpp"
#include "sessions/events.hpp"

namespace shardscope::launcher {

/// The launcher's exit code when the run doctor stopped a hung run (`--on-hang stop`), as
/// timeout(1) exits when it stopped its command.
inline constexpr int kHungRunExitCode = 124;

struct RankSpec {
  int rank = 0;
  int local_rank = 0;
  std::string device;   ///< "cuda:1" or "cpu": recorded in the session, not used to start it
  RankCommand command;
};

struct StartedRank {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  std::string device;
};

struct SupervisorOptions {
  std::vector<RankSpec> ranks;
  double grace_seconds = 10;                 ///< SIGTERM to SIGKILL when stopping ranks
  bool handle_signals = true;                ///< catch SIGINT/SIGTERM of this process during run()
  std::ostream* out = nullptr;               ///< where rank stdout lines are relayed
  std::ostream* err = nullptr;               ///< rank stderr lines and the launcher's messages
  std::optional<std::string> each_rank_log_dir;  ///< --enable_each_rank_log
  SupervisorVoice voice;                     ///< who speaks in its messages, what it calls the processes
  /// Every line of every rank, and the launcher's own messages as rank -1.
  std::function<void(const sessions::LogLine&)> on_line;
  /// Called once every rank has started, with their pids (for the session's RunStart).
  std::function<void(const std::vector<StartedRank>&)> on_started;
  /// Called as each rank's exit is seen, before the others are stopped (a node agent relays it).
  std::function<void(const struct RankResult&)> on_rank_exit;
  /// Called about once a second while ranks run (the run doctor's watch); a non-empty answer says
  /// why the run must end: every rank is stopped (SIGTERM, SIGKILL after the grace) and the run
  /// ends "hung" with kHungRunExitCode.
  std::function<std::string()> on_tick;
};

struct RankResult {
  int rank = 0;
  pid_t pid = 0;
  int wait_status = 0;
  int exit_code = 0;                 ///< as sessions record it: the code, or minus the signal
  bool stopped_by_launcher = false;  ///< it was still running when the launcher stopped the ranks
};

struct SupervisorResult {
  int exit_code = 0;                 ///< 0; the first failure's code or 128+signal; 128+signal when interrupted
  std::string status;                ///< "completed", "failed", "interrupted", "hung" (as RunEnd records it)
  std::vector<RankResult> ranks;     ///< in rank order
  std::optional<int> first_failed_rank;
  std::string first_failure;         ///< "rank 1 was killed by signal 9 (SIGKILL)" (in the voice's words)
  std::vector<std::string> first_failure_stderr;  ///< the last stderr lines of that rank
  int interrupt_signal = 0;          ///< SIGINT or SIGTERM received by the launcher, else 0
  std::string stopped_hung;          ///< why on_tick stopped the run ("" when it did not)
  bool killed_after_grace = false;   ///< some rank ignored SIGTERM/SIGINT and got SIGKILL
  double wall_seconds = 0;
};

class RankSupervisor {
 public:
  explicit RankSupervisor(SupervisorOptions options);
  ~RankSupervisor();
  RankSupervisor(const RankSupervisor&) = delete;
  RankSupervisor& operator=(const RankSupervisor&) = delete;

  /// Starts the ranks and watches them to the end. Throws LaunchError when a rank cannot be
  /// started (the ranks already started are killed first) or a log file cannot be written.
  SupervisorResult run();
  /// Thread-safe and async-signal-safe: stop every rank as if this process had received `signal`.
  void request_stop(int signal);

 private:
  struct State;
  void start_ranks(State& state);
  void wait_for_events(State& state);
  void read_output(State& state, std::size_t index, bool from_stderr);
  void handle_signal(State& state, int signal);
  void handle_exits(State& state);
  void tick(State& state);
  void stop_all(State& state, int signal);
  void message(const std::string& text, sessions::LogLevel level);
  SupervisorResult finish(State& state);

  SupervisorOptions options_;
  int wake_read_ = -1, wake_write_ = -1;
};

/// The launcher's exit code for one rank's wait status: the exit code, or 128 + the signal.
int shell_exit_code(int wait_status);

}  // namespace shardscope::launcher
