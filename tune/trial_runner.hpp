#pragma once
// One trial: a real `shardscope launch` of the candidate's config as a child process (the very
// build the tuner runs, found beside it), so a trial that goes out of memory or crashes ends only
// itself; its session is an ordinary launch session. docs/tune.md, "Trials".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::tune {

struct TrialLaunch {
  std::string shardscope;                ///< the shardscope executable
  std::vector<std::string> launch_flags; ///< --num_procs N / --num_gpus N / --hostfile F ...
  std::vector<std::string> train_args;   ///< after `--`, without --config/--steps/--session/--name
  std::string config_path;               ///< the candidate's ds_config.json
  std::string session_db;
  std::string session_name;
  std::int64_t steps = 0;                ///< optimizer steps to run
  std::string log_path;                  ///< the trial's stdout and stderr
  double timeout_s = 0;                  ///< 0 = none; then SIGTERM, and SIGKILL 10 s later
};

struct TrialProcessResult {
  int exit_code = -1;       ///< as a shell reports it: 128 + signal when killed
  bool timed_out = false;
  bool interrupted = false;    ///< the tuner was asked to stop while it ran (the trial then got SIGTERM)
  bool out_of_memory = false;  ///< the log shows an allocator's out-of-memory error
  std::string last_error;      ///< the launcher's verdict, else the last line that reads like an error
};

/// Reads a finished trial's log into `r`: out of memory or not, and the line that says why it
/// failed (the launcher's own verdict when there is one).
void scan_trial_log(const std::string& path, TrialProcessResult& r);

/// The argv of the trial's launch (for the log and the report).
std::vector<std::string> trial_command(const TrialLaunch& launch, int master_port);

/// Runs the trial and waits for it. The child dies with the tuner (PR_SET_PDEATHSIG), so a tuner
/// killed with SIGKILL leaves no trial running. Throws TuneError when it cannot be started.
TrialProcessResult run_trial_process(const TrialLaunch& launch);

/// Makes SIGINT and SIGTERM ask the tuner to stop instead of killing it: the running trial gets
/// SIGTERM (its launcher stops every rank), its row stays 'running' for --resume, and the outputs
/// are written from the trials so far. The GUI's Stop sends SIGTERM.
void install_stop_handlers();
/// True once SIGINT or SIGTERM arrived after install_stop_handlers.
bool stop_requested();

/// Whether a log line reads like an allocator's out-of-memory failure (CUDA, the CPU allocator, std::bad_alloc).
bool is_out_of_memory_line(const std::string& line);

/// The shardscope executable beside the running one (/proc/self/exe).
std::string own_shardscope_executable();

/// A TCP port free on loopback now (for each trial's MASTER_PORT, so trials never meet a
/// TIME_WAIT port of the previous one).
int free_loopback_port();

}  // namespace shardscope::tune
