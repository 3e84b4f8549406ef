#pragma once
// The collector: the TCP server the launcher hosts for one run. Every rank connects, proves it
// belongs to the run (collector_handshake.hpp), and streams events; the collector decodes them on
// a network thread and commits them in batched transactions on a writer thread (docs/sessions.md,
// "Collector").
//
// Guarantees: only connections that prove they hold the key of the rank they claim (derived from
// the run's secret, run_secret.hpp) write anything, one live connection per rank, and each
// writes only as the rank it proved (a launcher, rank -1, relays every rank's lines and starts and
// ends the run); memory for events is bounded before bytes are buffered (a frame's share is
// reserved from max_queue_bytes when its header arrives, and the network thread stops reading
// while the budget is spent, so TCP flow control makes the ranks wait; nothing is dropped);
// connections that do not finish the handshake in time, and half-open ones (keepalive), are
// dropped; a rank that disconnects or sends garbage is logged and closed while the others go on;
// stop() drains every socket and commits everything that arrived.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sessions/events.hpp"

namespace shardscope::sessions {

enum class CollectorLogLevel { kInfo, kWarning, kError };

struct CollectorOptions {
  std::string db_path;                       ///< created (mode 0600) when missing, upgraded when older
  std::string session_uid;                   ///< the run's session: every accepted event goes there
  std::string secret;                        ///< the run's secret (run_secret.hpp); required
  int world_size = 0;                        ///< > 0: a Hello must claim a rank in -1 .. world_size-1
  std::string bind_host = "127.0.0.1";       ///< the address the run uses (a multi-host run: this host's)
  int port = 0;                              ///< 0 = pick a free port (see Collector::port())
  std::size_t max_queue_bytes = 64u << 20;   ///< events decoded or being assembled, in accounted bytes
  std::size_t max_batch_records = 250000;    ///< records per transaction at most
  std::size_t max_connections = 4096;        ///< beyond this, new connections wait in the listen backlog
  /// Connections not yet proven, at once. Past it a new connection sheds the oldest unproven one
  /// (a rank answers its challenge in milliseconds; an idle or slow-loris peer is the oldest), or,
  /// when every unproven one is younger than handshake_grace_ms, one chosen at random: connections
  /// that never prove anything cannot keep a rank waiting in the backlog behind them.
  std::size_t max_handshakes = 256;
  std::size_t max_handshakes_per_address = 64;  ///< the same, per peer address (a host's fair share)
  int handshake_grace_ms = 250;              ///< an unproven connection younger than this is not shed
  int handshake_timeout_ms = 5000;           ///< an unproven connection idle this long is dropped
  int keepalive_idle_s = 20;                 ///< half-open connections: first keepalive probe after this
  int keepalive_interval_s = 5;              ///< then one probe per interval ...
  int keepalive_probes = 3;                  ///< ... and the connection is dropped after this many unanswered
  int drain_idle_ms = 500;                   ///< at stop(): a still-open socket silent this long is closed
  /// Receives the collector's own messages; the default prints "shardscope collector: ..." to stderr.
  std::function<void(CollectorLogLevel, const std::string&)> log;
  /// Sees every accepted event as it arrives, on the network thread, before it is queued for the
  /// store: the launcher's run doctor watches the run live this way. Must be quick and thread-safe;
  /// unset: nothing watches.
  std::function<void(const Event&)> observe;
};

struct CollectorStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t connections_refused = 0;   ///< failed or never finished the handshake; wrote nothing
  std::uint64_t connections_shed = 0;      ///< of those, closed unproven to make room for a newer one
  std::uint64_t connections_rejected = 0;  ///< proven, then closed for a protocol violation
  std::uint64_t bytes_received = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t records_received = 0;      ///< events, counting each kernel of a batch
  std::uint64_t records_committed = 0;
  std::uint64_t transactions = 0;
  std::uint64_t backpressure_pauses = 0;   ///< times the network thread stopped reading
  std::uint64_t write_failures = 0;        ///< failed transactions (retried)
  std::size_t queue_bytes_peak = 0;        ///< most accounted bytes held at once (queued + reserved)
};

class Collector {
 public:
  /// Opens the store at options.db_path now, so a bad file fails before any rank starts. Throws
  /// SessionsError(kInvalidArgument) without a session uid or a secret.
  explicit Collector(CollectorOptions options);
  /// Stops (draining and committing) if still running.
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  /// Binds, listens and starts the threads; throws SessionsError(kStorage) if the port is taken.
  void start();
  /// The port it listens on (the chosen one when options.port was 0).
  int port() const;
  /// "host:port", what ranks are given.
  std::string address() const;
  /// Stops accepting, reads what every open socket still has, commits it all, checkpoints the WAL.
  void stop();
  /// Counters so far (thread-safe).
  CollectorStats stats() const;
  /// Blocks until everything received so far is committed or `timeout_ms` passes; true if idle.
  bool wait_until_committed(int timeout_ms) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::sessions
