#pragma once
// Making sure a watched command leaves nothing behind. Launchers such as torchrun start their
// workers in sessions of their own, outside the command's process group; as a child subreaper
// this process inherits such orphans, so after the command ends it can find and end them.

#include <sys/types.h>

#include <vector>

namespace shardscope::launcher {

/// Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER); false if refused.
bool become_child_subreaper();
/// The pids of every live descendant of `root` (children first), read from /proc.
std::vector<pid_t> descendants_of(pid_t root);
/// Sends SIGTERM to every descendant of this process, waits up to `grace_seconds` for them to go,
/// SIGKILLs the rest, and reaps what became this process's children. Returns how many it ended.
std::size_t end_descendants(double grace_seconds);

}  // namespace shardscope::launcher
