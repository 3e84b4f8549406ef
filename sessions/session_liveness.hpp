#pragma once
// Who writes a session, and whether that writer still lives. Every session row records its
// writer (the collector's launcher, or a `train` writing straight to the file): host, pid and the
// process's start time (boot id plus start tick, so a reused pid is not mistaken for it). A
// session still "running" whose writer on this host is gone can never receive its RunEnd: the
// next writable open of the file (any `shardscope sessions` command, the next collector) marks it
// "interrupted" (docs/reliability.md, "kill -9").

#include <cstdint>
#include <string>

namespace shardscope::sessions {

class SqliteDb;

struct ProcessIdentity {
  std::string host;
  std::int64_t pid = 0;
  std::string start;  ///< "<boot id>:<start time in clock ticks since boot>"; "" when unknown
};

/// This process, as the writer of the sessions it creates.
ProcessIdentity this_process_identity();

/// The identity of process `pid` on this host now; start is "" when no such process exists.
ProcessIdentity local_process_identity(std::int64_t pid);

/// True when `writer` ran on this host and no process with its pid and start time exists now.
/// A writer on another host, or one recorded without a start time, is never judged dead.
bool writer_is_gone(const ProcessIdentity& writer);

/// Marks "interrupted" every running session of `db` whose writer is gone (one transaction);
/// returns how many it marked. Needs a writable connection at the current schema.
int mark_abandoned_sessions(SqliteDb& db);

}  // namespace shardscope::sessions
