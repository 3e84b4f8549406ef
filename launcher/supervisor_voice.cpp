#include "launcher/supervisor_voice.hpp"

#include "launcher/rank_process.hpp"

namespace shardscope::launcher {

std::string supervised_name(const SupervisorVoice& voice, int rank) {
  return voice.speaks_of_ranks() ? "rank " + std::to_string(rank) : voice.single_process;
}

std::string failure_message(const SupervisorVoice& voice, int rank, int pid, int wait_status) {
  const std::string what = supervised_name(voice, rank) + " (pid " + std::to_string(pid) + ") " +
                           describe_wait_status(wait_status);
  return voice.speaks_of_ranks() ? what + "; stopping the other ranks" : what;
}

std::string forwarding_message(const SupervisorVoice& voice, int signal, int grace_seconds) {
  const std::string received = "received " + signal_name(signal) + ": forwarding it to ";
  const std::string grace = " SIGKILL if still running in " + std::to_string(grace_seconds) + " s";
  if (voice.speaks_of_ranks()) return received + "every rank; they get" + grace + " (send it again to kill them now)";
  return received + voice.single_process + "; it gets" + grace + " (send it again to kill it now)";
}

std::string kill_now_message(const SupervisorVoice& voice, int signal) {
  const std::string who = voice.speaks_of_ranks() ? "every rank" : voice.single_process;
  return "received " + signal_name(signal) + " again: killing " + who + " now (SIGKILL)";
}

std::string grace_over_message(const SupervisorVoice& voice, int grace_seconds) {
  const std::string who = voice.speaks_of_ranks() ? "some ranks were" : voice.single_process + " was";
  return who + " still running " + std::to_string(grace_seconds) + " s after being told to stop; sending SIGKILL";
}

std::string program_noun(const SupervisorVoice& voice) {
  return voice.speaks_of_ranks() ? "rank program" : voice.single_process;
}

}  // namespace shardscope::launcher
