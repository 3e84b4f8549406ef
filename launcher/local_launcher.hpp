#pragma once
// `shardscope launch` on this machine, whole: plan the ranks, check the config and MASTER_PORT
// before anything starts, host the session, run and watch the ranks, and report how it ended.
// docs/launcher.md is the user guide.

#include <iosfwd>
#include <string>

#include "launcher/launch_plan.hpp"
#include "launcher/rank_supervisor.hpp"

namespace shardscope::launcher {

struct LaunchOutcome {
  int exit_code = 0;         ///< 0, the first failing rank's code (128+signal if killed), 128+signal if interrupted
  SupervisorResult result;
  std::string session_uid;   ///< empty without --session
};

/// Runs the launch. Rank output goes to `out`/`err` line by line; the launcher's messages go to
/// `err` prefixed "shardscope launch: ". Throws LaunchError before any rank has started (bad
/// flags, no GPU, busy port, config errors, unusable session file).
LaunchOutcome launch_local(const LaunchRequest& request, std::ostream& out, std::ostream& err);

/// The session name: --name, else the train arguments' --name, else the config file's stem,
/// else "launch".
std::string launch_session_name(const LaunchRequest& request, const TrainArgsView& train);

/// The resolved config JSON for the session (validated at `world_size` with the --set overrides,
/// under the rules of the train arguments' --deepspeed-version, else 0.19.7's);
/// throws LaunchError(kConfig) with DeepSpeed-style diagnostics when it has errors.
std::string resolve_launch_config(const TrainArgsView& train, int world_size);

}  // namespace shardscope::launcher
