#pragma once
// SIGINT and SIGTERM of the launcher (or a node agent) routed into a wake-up pipe for as long as
// a SignalRouting lives, so the poll loop that watches the ranks handles them like any other event
// (RankSupervisor for local ranks, RemoteLauncher for the agents of every host).

#include <signal.h>

namespace shardscope::launcher {

class SignalRouting {
 public:
  /// Routes the signals to `wake_fd` (one byte, the signal number); -1 routes nothing. Throws
  /// std::logic_error when another SignalRouting is active in this process.
  explicit SignalRouting(int wake_fd);
  ~SignalRouting();
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;

 private:
  bool active_;
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace shardscope::launcher
