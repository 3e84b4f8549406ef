#include "sessions/collector.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <list>
#include <mutex>
#include <thread>

#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::sessions {
namespace {

// Decoded events cost more than their wire bytes (strings, vectors); count a fixed overhead per
// record on top so the queue bound is a real bound on memory, not on bytes received.
constexpr std::size_t kRecordOverheadBytes = 96;
constexpr std::size_t kReadChunk = 64u << 10;
constexpr std::size_t kMaxReadPerTurn = 1u << 20;  // fairness: one busy rank cannot starve others

struct Connection {
  int fd = -1;
  std::string peer;
  FrameDecoder decoder;
  std::shared_ptr<const std::string> session_uid;  ///< set by Hello
  int rank = -2;
  std::uint64_t records = 0;

  std::string who() const {
    return (rank == -2 ? std::string("unidentified peer") : "rank " + std::to_string(rank)) + " (" + peer + ")";
  }
};

struct Chunk {
  std::vector<SessionEvent> events;
  std::size_t bytes = 0;
  std::size_t records = 0;
};

std::string peer_name(const sockaddr_storage& address) {
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&address), sizeof address, host, sizeof host, port,
                sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

}  // namespace

struct Collector::Impl {
  CollectorOptions options;
  Store store;
  std::unique_ptr<StoreWriter> writer;
  int listen_fd = -1;
  int wake_read = -1, wake_write = -1;
  int port = 0;
  std::thread io_thread, writer_thread;
  bool running = false;

  mutable std::mutex mutex;
  mutable std::condition_variable items_ready, committed;
  std::deque<Chunk> queue;
  std::size_t queue_bytes = 0;
  bool io_done = false;
  std::atomic<bool> stopping{false};
  std::list<Connection> connections;
  CollectorStats stats;  // guarded by mutex

  explicit Impl(CollectorOptions o) : options(std::move(o)), store(open_store(options.db_path)) {}

  static Store open_store(const std::string& path) {
    StoreOpenOptions open;
    open.create_if_missing = true;
    return Store::open(path, open);
  }

  void log(CollectorLogLevel level, const std::string& message) const {
    if (options.log) return options.log(level, message);
    std::cerr << "shardscope collector: " << message << "\n";
  }

  void wake() const {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_write, &byte, 1);
  }

  void listen_on();
  void io_loop();
  void accept_all();
  bool read_connection(Connection& c);
  void decode_frames(Connection& c, Chunk& chunk);
  void close_connection(std::list<Connection>::iterator it, const std::string& why, CollectorLogLevel level);
  void writer_loop();
  void write_with_retry(const std::vector<SessionEvent>& batch);
};

void Collector::Impl::listen_on() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string where = options.bind_host + ":" + std::to_string(options.port);
  if (const int rc = ::getaddrinfo(options.bind_host.c_str(), std::to_string(options.port).c_str(), &hints, &found))
    throw SessionsError(ErrorKind::kStorage, "collector cannot resolve " + where + ": " + gai_strerror(rc));
  std::string cause;
  for (addrinfo* a = found; a && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd >= 0 && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      listen_fd = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      cause = std::strerror(errno);
      if (fd >= 0) ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd < 0)
    throw SessionsError(ErrorKind::kStorage, "collector cannot listen on " + where + ": " + cause +
                                                 " (pick another port, or 0 for any free one)");
}

void Collector::Impl::accept_all() {
  while (true) {
    sockaddr_storage address{};
    socklen_t len = sizeof address;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&address), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        log(CollectorLogLevel::kError, std::string("accept failed: ") + std::strerror(errno));
      return;
    }
    Connection c;
    c.fd = fd;
    c.peer = peer_name(address);
    std::lock_guard<std::mutex> lock(mutex);
    connections.push_back(std::move(c));
    ++stats.connections_accepted;
    ++stats.connections_open;
  }
}

void Collector::Impl::close_connection(std::list<Connection>::iterator it, const std::string& why,
                                       CollectorLogLevel level) {
  log(level, it->who() + (it->session_uid ? " of session " + *it->session_uid : std::string()) + ": " + why +
                 "; " + std::to_string(it->records) + " records from it were kept");
  ::close(it->fd);
  std::lock_guard<std::mutex> lock(mutex);
  if (level != CollectorLogLevel::kInfo) ++stats.connections_rejected;
  --stats.connections_open;
  connections.erase(it);
}

void Collector::Impl::decode_frames(Connection& c, Chunk& chunk) {
  Frame frame;
  while (c.decoder.next(frame)) {
    if (auto* hello = std::get_if<Hello>(&frame)) {
      if (c.session_uid) throw ProtocolError("a second Hello frame on the same connection");
      if (hello->protocol_version != kProtocolVersion)
        throw ProtocolError("protocol version " + std::to_string(hello->protocol_version) + ", this collector speaks " +
                            std::to_string(kProtocolVersion) + " (rank and launcher come from different builds)");
      if (hello->session_uid.empty()) throw ProtocolError("Hello without a session uid");
      c.session_uid = std::make_shared<const std::string>(hello->session_uid);
      c.rank = hello->rank;
      continue;
    }
    if (!c.session_uid) throw ProtocolError("the first frame must be Hello");
    Event& event = std::get<Event>(frame);
    const std::size_t records = event_record_count(event);
    chunk.records += records;
    c.records += records;
    chunk.events.push_back({c.session_uid, std::move(event)});
  }
}

// Reads what the socket has (bounded per turn), decodes whole frames, queues them. Returns false
// when the connection is finished (closed by the peer or rejected) and was removed.
bool Collector::Impl::read_connection(Connection& c) {
  Chunk chunk;
  char buffer[kReadChunk];
  bool eof = false;
  std::string error;
  std::size_t read_total = 0;
  while (read_total < kMaxReadPerTurn) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      c.decoder.feed(buffer, static_cast<std::size_t>(n));
      read_total += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) eof = true;
    else if (errno == EINTR) continue;
    else if (errno != EAGAIN && errno != EWOULDBLOCK) error = std::strerror(errno);
    break;
  }
  std::string violation;
  try {
    decode_frames(c, chunk);
  } catch (const ProtocolError& e) {
    violation = e.what();
  }
  chunk.bytes = read_total + chunk.records * kRecordOverheadBytes;
  {
    std::lock_guard<std::mutex> lock(mutex);
    stats.bytes_received += read_total;
    stats.frames_received += chunk.events.size();
    stats.records_received += chunk.records;
    if (!chunk.events.empty()) {
      queue_bytes += chunk.bytes;
      if (queue_bytes > stats.queue_bytes_peak) stats.queue_bytes_peak = queue_bytes;
      queue.push_back(std::move(chunk));
    }
  }
  items_ready.notify_one();
  auto it = std::find_if(connections.begin(), connections.end(), [&](const Connection& x) { return &x == &c; });
  if (!violation.empty()) {
    close_connection(it, "sent garbage (" + violation + "); connection closed", CollectorLogLevel::kWarning);
  } else if (!error.empty()) {
    close_connection(it, "connection failed: " + error, CollectorLogLevel::kWarning);
  } else if (eof && c.decoder.buffered_bytes() > 0) {
    close_connection(it, "disconnected in the middle of a frame (" + std::to_string(c.decoder.buffered_bytes()) +
                             " bytes of an incomplete frame discarded)", CollectorLogLevel::kWarning);
  } else if (eof) {
    close_connection(it, "disconnected", CollectorLogLevel::kInfo);
  } else {
    return true;
  }
  return false;
}

void Collector::Impl::io_loop() {
  std::vector<pollfd> fds;
  std::vector<Connection*> owners;
  bool was_paused = false;
  bool backlog_taken = false;
  while (true) {
    bool paused;
    {
      std::lock_guard<std::mutex> lock(mutex);
      paused = queue_bytes >= options.max_queue_bytes;
      if (paused && !was_paused) ++stats.backpressure_pauses;
    }
    was_paused = paused;
    const bool draining = stopping.load();
    if (draining && !backlog_taken) {
      // Ranks whose connect() completed before stop() wait in the listen backlog; their events
      // count as arrived, so take them in before draining.
      accept_all();
      backlog_taken = true;
    }
    if (draining && connections.empty()) break;
    fds.assign(1, pollfd{wake_read, POLLIN, 0});
    owners.assign(1, nullptr);
    if (!draining) {
      fds.push_back({listen_fd, POLLIN, 0});
      owners.push_back(nullptr);
    }
    for (auto& c : connections) {
      fds.push_back({c.fd, static_cast<short>(paused ? 0 : POLLIN), 0});
      owners.push_back(&c);
    }
    const int timeout = paused ? 50 : draining ? options.drain_idle_ms : -1;
    const int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) {
      log(CollectorLogLevel::kError, std::string("poll failed: ") + std::strerror(errno));
      break;
    }
    if (rc == 0 && draining && !paused) {
      while (!connections.empty())
        close_connection(connections.begin(), "still connected but silent at shutdown; closed",
                         CollectorLogLevel::kWarning);
      break;
    }
    if (fds[0].revents & POLLIN) {
      char sink[256];
      while (::read(wake_read, sink, sizeof sink) > 0) {
      }
    }
    if (!draining && (fds[1].revents & POLLIN)) accept_all();
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (owners[i] && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) read_connection(*owners[i]);
  }
  std::lock_guard<std::mutex> lock(mutex);
  io_done = true;
  items_ready.notify_all();
}

void Collector::Impl::write_with_retry(const std::vector<SessionEvent>& batch) {
  for (int attempt = 1;; ++attempt) {
    try {
      writer->write(batch);
      return;
    } catch (const SessionsError& e) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++stats.write_failures;
      }
      // Keep the batch and retry: back-pressure holds the ranks meanwhile. Only at shutdown, after
      // repeated failures, is there nobody left to wait for.
      if (stopping.load() && attempt >= 5) {
        log(CollectorLogLevel::kError, "giving up on " + std::to_string(batch.size()) +
                                           " events after 5 failed transactions at shutdown: " + e.what());
        return;
      }
      log(CollectorLogLevel::kError, std::string("transaction failed, retrying: ") + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 100 * attempt)));
    }
  }
}

void Collector::Impl::writer_loop() {
  std::vector<SessionEvent> batch;
  while (true) {
    std::size_t bytes = 0, records = 0;
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mutex);
      items_ready.wait(lock, [&] { return !queue.empty() || io_done; });
      if (queue.empty()) break;
      while (!queue.empty() && (records == 0 || records + queue.front().records <= options.max_batch_records)) {
        Chunk& chunk = queue.front();
        bytes += chunk.bytes;
        records += chunk.records;
        for (auto& e : chunk.events) batch.push_back(std::move(e));
        queue.pop_front();
      }
    }
    write_with_retry(batch);
    bool was_full;
    {
      std::lock_guard<std::mutex> lock(mutex);
      was_full = queue_bytes >= options.max_queue_bytes;
      queue_bytes -= bytes;
      stats.records_committed += records;
      ++stats.transactions;
    }
    committed.notify_all();
    if (was_full) wake();
  }
}

Collector::Collector(CollectorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Collector::~Collector() {
  try {
    stop();
  } catch (const std::exception& e) {
    impl_->log(CollectorLogLevel::kError, std::string("error while stopping: ") + e.what());
  }
}

void Collector::start() {
  if (impl_->running) return;
  impl_->listen_on();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw SessionsError(ErrorKind::kStorage, std::string("collector cannot create its wake pipe: ") + std::strerror(errno));
  impl_->wake_read = pipe_fds[0];
  impl_->wake_write = pipe_fds[1];
  impl_->writer = std::make_unique<StoreWriter>(impl_->store);
  impl_->running = true;
  impl_->writer_thread = std::thread([this] { impl_->writer_loop(); });
  impl_->io_thread = std::thread([this] { impl_->io_loop(); });
}

int Collector::port() const { return impl_->port; }

std::string Collector::address() const { return impl_->options.bind_host + ":" + std::to_string(impl_->port); }

void Collector::stop() {
  if (!impl_->running) return;
  impl_->stopping = true;
  impl_->wake();
  impl_->io_thread.join();
  impl_->writer_thread.join();
  ::close(impl_->listen_fd);
  ::close(impl_->wake_read);
  ::close(impl_->wake_write);
  impl_->running = false;
  impl_->writer.reset();
  impl_->store.checkpoint();
}

CollectorStats Collector::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

bool Collector::wait_until_committed(int timeout_ms) const {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  return impl_->committed.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return impl_->queue.empty() && impl_->stats.records_committed == impl_->stats.records_received;
  });
}

}  // namespace shardscope::sessions
