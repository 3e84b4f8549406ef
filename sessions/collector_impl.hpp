#pragma once
// Internal to the collector (collector.cpp: threads, listening socket, writer; collector_io.cpp:
// the network thread's connections, handshake, bounded reads and checks). Not a public header.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sessions/collector.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::sessions {

using CollectorClock = std::chrono::steady_clock;

struct CollectorConnection {
  int fd = -1;
  std::string peer;
  std::string address;        ///< the peer's address without its port (fair shares are per address)
  CollectorClock::time_point accepted_at;
  FrameDecoder decoder{kMaxHandshakeFrameBytes};  ///< raised to kMaxFrameBytes once proven
  bool proven = false;
  Nonce server_nonce{};
  CollectorClock::time_point handshake_deadline;
  int rank = -2;              ///< the rank it proved, -1 a launcher, -2 not yet known
  std::string host;
  std::int64_t pid = 0;
  std::uint64_t records = 0;
  std::size_t reserved = 0;   ///< budget held for the frame being assembled
  std::size_t partial_charge = 0;  ///< bytes of an unfinished frame left by a read-ahead, charged as they are
  bool waiting_for_budget = false;

  std::string who() const;
};

/// A group of decoded events queued for the writer, with the budget they hold.
struct CollectorChunk {
  // A deque, not a vector: a chunk holds no doubling slack that the budget's per-event charge
  // (collector_io.cpp, frame_share) would not cover, growing it never moves an event, and the
  // writer's batch can point at the events where they are. QueuedEvent, not SessionEvent: about
  // 250 bytes an event instead of 990, so the cap holds 2.5 times the records of one transaction.
  std::deque<QueuedEvent> events;
  std::size_t bytes = 0;
  std::size_t records = 0;
};

struct Collector::Impl {
  CollectorOptions options;
  Store store;
  std::shared_ptr<const std::string> session_uid;
  std::unique_ptr<StoreWriter> writer;
  int listen_fd = -1;
  int wake_read = -1, wake_write = -1;
  int port = 0;
  std::thread io_thread, writer_thread, checkpoint_thread;
  bool running = false;
  std::unique_ptr<SqliteDb> checkpoint_db;  ///< the checkpointer's own connection

  // The writer asks, the checkpointer copies the WAL into the file (checkpoint_loop).
  std::mutex checkpoint_mutex;
  std::condition_variable checkpoint_asked_cv, checkpoint_done_cv;
  std::uint64_t checkpoints_asked = 0, checkpoints_done = 0;  // guarded by checkpoint_mutex
  bool checkpoint_stop = false;                               // guarded by checkpoint_mutex

  mutable std::mutex mutex;
  mutable std::condition_variable items_ready, committed;
  std::deque<CollectorChunk> queue;
  std::size_t queue_bytes = 0;     ///< accounted bytes of queued chunks (guarded by mutex)
  /// Queued bytes at which the writer stops gathering and starts a transaction (writer_loop).
  std::size_t batch_gather_bytes() const { return options.max_queue_bytes / 2; }
  std::size_t reserved_bytes = 0;  ///< budget reserved by frames being assembled (guarded by mutex)
  std::size_t partial_bytes = 0;   ///< of reserved_bytes, connections' partial_charge (guarded by mutex)
  bool io_done = false;
  std::atomic<bool> stopping{false};
  std::list<CollectorConnection> connections;  ///< the network thread's only, in order of arrival
  std::size_t unproven = 0;                     ///< connections of `connections` not yet proven
  std::uint64_t refusals_warned = 0;            ///< refusals so far (the first few are warnings)
  CollectorClock::time_point accept_paused_until;  ///< out of descriptors: stop accepting a moment
  CollectorStats stats;                         // guarded by mutex

  explicit Impl(CollectorOptions o);

  void log(CollectorLogLevel level, const std::string& message) const;
  void wake() const;

  // collector.cpp
  void listen_on();
  void writer_loop();
  void write_with_retry(const std::vector<const QueuedEvent*>& batch);
  void checkpoint_loop();
  /// After a commit: asks the checkpointer for a copy, and waits for it when the WAL is too long.
  void checkpoint_after_commit();
  void stop_checkpointer();

  // collector_io.cpp
  void io_loop();
  void accept_all();
  /// Makes room for a new unproven connection from `address` by shedding an older unproven one.
  void make_handshake_room(const std::string& address);
  /// Closes an unproven connection (of `address`, when not empty) chosen at random.
  void shed_random_unproven(const std::string& address);
  std::minstd_rand shed_choice{std::random_device{}()};
  /// Closes the oldest unproven connection (of `address`, when not empty) older than the grace.
  bool shed_oldest_unproven(const std::string& address);
  void read_connection(std::list<CollectorConnection>::iterator it);
  void read_handshake(CollectorConnection& c);
  enum class ReadEnd { kOpen, kEndOfStream, kFailed };
  /// Reads and queues what the socket has; `failure` says why when it returns kFailed.
  ReadEnd read_events(CollectorConnection& c, CollectorChunk& chunk, std::string& failure);
  bool reserve_frame(CollectorConnection& c);
  /// Reserves the worst-case memory of one read-ahead at a frame boundary; the bytes to read, or 0.
  std::size_t reserve_read_ahead(std::size_t& charge);
  void admit_hello(CollectorConnection& c, const Hello& hello);
  void check_event(const CollectorConnection& c, const Event& event) const;
  void close_connection(std::list<CollectorConnection>::iterator it, const std::string& why, CollectorLogLevel level,
                        bool refused);
  void drop_expired_handshakes();
  bool budget_exhausted() const;
  std::size_t handshakes_open() const;
  int poll_timeout_ms(bool paused, bool draining) const;
};

}  // namespace shardscope::sessions
