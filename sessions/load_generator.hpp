#pragma once
// The ranks of `shardscope-load` (docs/benchmarks.md, "shardscope-load"): N ranks that each
// connect to a collector, prove themselves with their own key derived from the run's secret
// (client_handshake, the same as TcpEventSink), and stream a LoadScript's events in the wire
// framing, at a pace or flat out. A few sender threads multiplex the ranks' non-blocking sockets,
// so a thousand ranks cost the machine a thousand sockets, not a thousand threads competing with
// the collector they measure. A rank whose socket is full waits (the collector's back-pressure);
// that wait is measured, never skipped.

#include <cstdint>
#include <string>

#include "sessions/load_script.hpp"

namespace shardscope::sessions {

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string secret;           ///< the run's secret; rank r proves itself with rank_key(secret, r)
  int ranks = 64;
  std::int64_t steps = 200;     ///< steps each rank plays
  double step_ms = 0;           ///< > 0: each rank starts a step every step_ms (paced); 0: flat out
  bool recorded_pace = false;   ///< each step lasts what it did when recorded, divided by `speed`
  double speed = 1;
  int threads = 1;              ///< sender threads, each playing every threads-th rank
  bool announce_run = true;     ///< a launcher connection (rank -1) sends RunStart first and RunEnd last
  int startup_deadline_ms = 60000;  ///< a busy collector's handshake is retried until this passes
};

struct LoadResult {
  double connect_s = 0;             ///< every rank connected and proven
  double send_s = 0;                ///< from the first step sent to the last rank's close
  std::uint64_t records_sent = 0;   ///< event_record_count over everything sent (the launcher's too)
  std::uint64_t frames_sent = 0;
  std::uint64_t bytes_sent = 0;
  double max_blocked_s = 0;         ///< the longest total time one rank's socket stayed full
  double mean_blocked_s = 0;        ///< the same, averaged over ranks
  double worst_lag_ms = 0;          ///< paced: the furthest behind its schedule a rank's step started
};

/// Plays `script` as options.ranks ranks against the collector at host:port. Throws
/// CollectorUnreachableError when a rank cannot connect or prove itself, or loses its connection.
LoadResult run_load(const LoadScript& script, const LoadOptions& options);

}  // namespace shardscope::sessions
