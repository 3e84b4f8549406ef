#pragma once
// Why a user's training command ended before its first step (`shardscope watch`, `sessions
// import` of such a run's output): the last lines of its output read for the causes users meet
// first, each with the way to launch it that works. DeepSpeed started without a launcher's
// environment falls back to MPI discovery and fails on `import mpi4py`; a busy master port, a
// missing package, a config DeepSpeed refuses and an out-of-memory at start are the others.

#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::diagnosis {

/// The finding for a run that exited with `exit_code` (non-zero) before any step, from the tail
/// of its output (oldest first); nullopt when the exit code is 0. Kind "failed_start"; an
/// unrecognised failure still gets one, quoting the output's last error line.
std::optional<sessions::Finding> diagnose_failed_start(const std::vector<std::string>& output_tail, int exit_code);

}  // namespace shardscope::diagnosis
