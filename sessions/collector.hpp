#pragma once
// The collector: the TCP server the launcher hosts. Every rank connects, says Hello, and streams
// events; the collector decodes them on a network thread and commits them in batched transactions
// on a writer thread (docs/sessions.md, "Collector").
//
// Guarantees: memory stays bounded (when the queue is full the network thread stops reading the
// sockets, so TCP flow control makes the ranks wait; nothing is dropped); a rank that disconnects
// or sends garbage is logged and closed while the others go on; stop() drains every socket and
// commits everything that arrived.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace shardscope::sessions {

enum class CollectorLogLevel { kInfo, kWarning, kError };

struct CollectorOptions {
  std::string db_path;                       ///< created when missing, upgraded when older
  std::string bind_host = "127.0.0.1";       ///< "0.0.0.0" to accept ranks on other nodes
  int port = 0;                              ///< 0 = pick a free port (see Collector::port())
  std::size_t max_queue_bytes = 64u << 20;   ///< decoded events waiting for the writer
  std::size_t max_batch_records = 50000;     ///< records per transaction at most
  int drain_idle_ms = 500;                   ///< at stop(): a still-open socket silent this long is closed
  /// Receives the collector's own messages; the default prints "shardscope collector: ..." to stderr.
  std::function<void(CollectorLogLevel, const std::string&)> log;
};

struct CollectorStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t connections_rejected = 0;  ///< closed for a protocol violation
  std::uint64_t bytes_received = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t records_received = 0;      ///< events, counting each kernel of a batch
  std::uint64_t records_committed = 0;
  std::uint64_t transactions = 0;
  std::uint64_t backpressure_pauses = 0;   ///< times the network thread stopped reading
  std::uint64_t write_failures = 0;        ///< failed transactions (retried)
  std::size_t queue_bytes_peak = 0;
};

class Collector {
 public:
  /// Opens the store at options.db_path now, so a bad file fails before any rank starts.
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
