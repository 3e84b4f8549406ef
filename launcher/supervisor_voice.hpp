#pragma once
// Who speaks in RankSupervisor's messages and what it calls the processes it watches. The
// launcher speaks of its ranks ("shardscope launch: rank 2 (pid 7) exited with code 1; stopping
// the other ranks"); `shardscope watch` runs one command of the user's, which is no rank of
// ShardScope's ("shardscope watch: the command (pid 7) exited with code 1"). The messages are
// built from this value, each in its own wording, rather than rewritten afterwards.

#include <string>

namespace shardscope::launcher {

struct SupervisorVoice {
  std::string speaker = "shardscope launch";  ///< every line on `err` is "<speaker>: <text>"
  /// What the one supervised process is called ("the command"); empty: the processes are ranks.
  std::string single_process;

  bool speaks_of_ranks() const { return single_process.empty(); }
};

/// "rank 2", or the single process's name.
std::string supervised_name(const SupervisorVoice& voice, int rank);
/// "rank 2 (pid 7) exited with code 1; stopping the other ranks" or "the command (pid 7) exited with code 1".
std::string failure_message(const SupervisorVoice& voice, int rank, int pid, int wait_status);
/// The first SIGINT/SIGTERM: forwarded, and when SIGKILL follows.
std::string forwarding_message(const SupervisorVoice& voice, int signal, int grace_seconds);
/// A second signal while stopping: SIGKILL at once.
std::string kill_now_message(const SupervisorVoice& voice, int signal);
/// The grace period ran out: SIGKILL.
std::string grace_over_message(const SupervisorVoice& voice, int grace_seconds);
/// What a failure to start is called in LaunchError's text: "rank program" or "the command".
std::string program_noun(const SupervisorVoice& voice);

}  // namespace shardscope::launcher
