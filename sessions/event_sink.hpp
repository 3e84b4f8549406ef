#pragma once
// Where a rank's events go. The engine holds an EventSink and calls send() from each rank:
// TcpEventSink streams to the launcher's collector; FileEventSink writes straight into a session
// file when a run has no launcher. Both are thread-safe (the comm logger and the training loop
// may report from different threads).

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sessions/collector_handshake.hpp"
#include "sessions/events.hpp"

namespace shardscope::sessions {

class EventSink {
 public:
  virtual ~EventSink() = default;
  /// Queues one event. May block while the collector applies back-pressure; never drops it.
  virtual void send(const Event& event) = 0;
  /// Pushes everything queued out (to the socket or into the file).
  virtual void flush() = 0;
  /// Flushes and releases the connection or file; later sends throw.
  virtual void close() = 0;
};

struct TcpSinkOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string secret;                   ///< this rank's key: rank_key(run secret, rank) (run_secret.hpp)
  int rank = 0;                         ///< -1 for a launcher
  int connect_timeout_ms = 5000;        ///< a rank gives up this fast when nobody listens
  int handshake_timeout_ms = 5000;      ///< one attempt waits this long for the collector's challenge
  /// A collector that is busy (its challenge late, or the connection shed before it: a flood of
  /// unproven connections) is tried again with backoff, 50 ms doubling to 2 s, until this deadline.
  int startup_deadline_ms = 60000;
  std::size_t buffer_bytes = 256 << 10; ///< bytes batched before a write to the socket
};

class TcpEventSink final : public EventSink {
 public:
  /// Connects and proves the run's secret (client_handshake); throws CollectorUnreachableError
  /// naming host:port and the cause (nobody listening, the secret refused, an impostor).
  explicit TcpEventSink(const TcpSinkOptions& options);
  ~TcpEventSink() override;

  /// The run's session uid, as the collector's Welcome named it.
  const std::string& session_uid() const { return handshake_.session_uid; }
  /// This host's clock minus the collector host's, measured during the handshake.
  double clock_offset_s() const { return handshake_.clock_offset_s; }
  /// Round trip of the handshake's Hello/Welcome: the offset is good to half of it.
  double handshake_round_trip_s() const { return handshake_.round_trip_s; }

  /// Buffers the frame; writes out when the buffer is full or the event ends a step
  /// (StepMetrics), starts or ends the run, or is a log line, so live views stay current.
  void send(const Event& event) override;
  void flush() override;
  void close() override;

 private:
  void write_all_locked();
  std::string where() const;
  void connect_and_prove();

  TcpSinkOptions options_;
  HandshakeResult handshake_;
  int fd_ = -1;
  std::string buffer_;
  std::mutex mutex_;
};

struct FileSinkOptions {
  std::string db_path;
  std::string session_uid;
  std::size_t batch_events = 4096;  ///< events per transaction
};

class FileEventSink final : public EventSink {
 public:
  /// Opens (creating or upgrading) the store; throws StoreError as Store::open does.
  explicit FileEventSink(const FileSinkOptions& options);
  ~FileEventSink() override;

  /// Queues; commits a transaction every batch_events events and at StepMetrics/RunEnd.
  void send(const Event& event) override;
  void flush() override;
  void close() override;

 private:
  struct State;
  void flush_locked();

  FileSinkOptions options_;
  std::unique_ptr<State> state_;
  std::mutex mutex_;
};

/// Splits "host:port" ("[::1]:29600" for IPv6); throws SessionsError(kInvalidArgument).
std::pair<std::string, int> parse_host_port(const std::string& text);
/// A new session id: 32 random hex digits.
std::string new_session_uid();

}  // namespace shardscope::sessions
