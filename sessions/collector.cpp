#include "sessions/collector.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "sessions/collector_impl.hpp"
#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"

namespace shardscope::sessions {
namespace {

CollectorOptions checked(CollectorOptions options) {
  if (options.session_uid.empty())
    throw SessionsError(ErrorKind::kInvalidArgument, "a collector records one run: give it the run's session uid");
  if (options.secret.empty())
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "a collector needs the run's secret (run_secret.hpp): without one any local process could "
                        "write into the session");
  return options;
}

// Checkpoints (docs/benchmarks.md, "shardscope-load"). SQLite's automatic checkpoint ran on the
// writer's thread after every commit that left 1,000 frames in the WAL: at 1,024 ranks each commit
// dirties a leaf page per rank of every rank-ordered index (about 3,000 pages), so every commit
// was copied twice on the one thread that limits the rate (7 of 16 s in a writer-only run). A
// thread with its own connection copies instead, passively (never taking the write lock), while
// the writer fills its next transaction. SQLite starts the WAL over only when a transaction begins
// with the whole WAL copied, so past kWalLimitFrames the writer waits for one copy that covers
// its last commit: the WAL stays near that size instead of growing for as long as ingest runs.
constexpr std::int64_t kCheckpointFrames = 1000;    // SQLite's own threshold (4 MB of 4 KiB pages)
constexpr std::int64_t kWalLimitFrames = 16384;     // 64 MiB of WAL
constexpr auto kCheckpointWait = std::chrono::seconds(5);

// Batches (docs/benchmarks.md, "shardscope-load"). Every commit at 1,024 ranks dirties a leaf page
// per rank of each rank-ordered index whatever its size, so the writer, woken by the first chunk,
// gathers until half the queue's cap is queued (or kBatchGather has passed, or the ranks are
// done) before it starts a transaction: commits carry more records each, and the network thread
// fills the other half of the cap while the writer writes. A live view waits at most this long
// for a quiet run's events.
constexpr auto kBatchGather = std::chrono::milliseconds(20);

}  // namespace

Collector::Impl::Impl(CollectorOptions o)
    : options(checked(std::move(o))),
      store(Store::open_or_create(options.db_path)),
      session_uid(std::make_shared<const std::string>(options.session_uid)) {}

void Collector::Impl::log(CollectorLogLevel level, const std::string& message) const {
  if (options.log) return options.log(level, message);
  std::cerr << "shardscope collector: " << message << "\n";
}

void Collector::Impl::wake() const {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_write, &byte, 1);
}

void Collector::Impl::listen_on() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = options.bind_host + ":" + std::to_string(options.port);
  if (options.bind_host.empty())
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "the collector needs the address the run uses; it never listens on every interface");
  if (const int rc = ::getaddrinfo(options.bind_host.c_str(), std::to_string(options.port).c_str(), &hints, &found))
    throw SessionsError(ErrorKind::kStorage, "collector cannot resolve " + where + ": " + gai_strerror(rc));
  std::string cause;
  for (addrinfo* a = found; a && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    const int one = 1;
    if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
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

void Collector::Impl::write_with_retry(const std::vector<const QueuedEvent*>& batch) {
  for (int attempt = 1;; ++attempt) {
    try {
      writer->write(*session_uid, batch);
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

void Collector::Impl::checkpoint_loop() {
  std::unique_lock<std::mutex> lock(checkpoint_mutex);
  while (true) {
    checkpoint_asked_cv.wait(lock, [&] { return checkpoints_asked > checkpoints_done || checkpoint_stop; });
    if (checkpoints_asked == checkpoints_done) break;  // stopping, nothing asked
    const std::uint64_t run = checkpoints_asked;
    lock.unlock();
    try {
      checkpoint_db->checkpoint_passive();  // an incomplete copy (a reader's old snapshot) is retried next time
    } catch (const SessionsError& e) {
      log(CollectorLogLevel::kWarning, std::string("WAL checkpoint failed (retried after the next commit): ") + e.what());
    }
    lock.lock();
    checkpoints_done = run;
    checkpoint_done_cv.notify_all();
  }
}

void Collector::Impl::checkpoint_after_commit() {
  const std::int64_t frames = store.db().wal_frames();
  if (frames < kCheckpointFrames) return;
  std::unique_lock<std::mutex> lock(checkpoint_mutex);
  const std::uint64_t asked = ++checkpoints_asked;  // a copy that starts from now on covers this commit
  checkpoint_asked_cv.notify_one();
  if (frames < kWalLimitFrames) return;
  checkpoint_done_cv.wait_for(lock, kCheckpointWait, [&] { return checkpoints_done >= asked; });
}

void Collector::Impl::stop_checkpointer() {
  {
    std::lock_guard<std::mutex> lock(checkpoint_mutex);
    checkpoint_stop = true;
  }
  checkpoint_asked_cv.notify_one();
  if (checkpoint_thread.joinable()) checkpoint_thread.join();
  checkpoint_db.reset();
}

void Collector::Impl::writer_loop() {
  // The batch points into the chunks it takes: moving each event into one vector was about 5 % of
  // the process's time at 1,024 ranks. `taken` is a deque because growing it
  // never relocates a chunk (a vector would copy them, moving a std::deque may throw, and the
  // batch's pointers would dangle).
  std::deque<CollectorChunk> taken;
  std::vector<const QueuedEvent*> batch;
  while (true) {
    std::size_t bytes = 0, records = 0;
    taken.clear();
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mutex);
      items_ready.wait(lock, [&] { return !queue.empty() || io_done; });
      if (queue.empty()) break;
      items_ready.wait_for(lock, kBatchGather, [&] { return queue_bytes >= batch_gather_bytes() || io_done; });
      while (!queue.empty() && (records == 0 || records + queue.front().records <= options.max_batch_records)) {
        CollectorChunk& chunk = queue.front();
        bytes += chunk.bytes;
        records += chunk.records;
        for (const auto& e : chunk.events) batch.push_back(&e);
        taken.push_back(std::move(chunk));  // the events stay where they are
        queue.pop_front();
      }
    }
    write_with_retry(batch);
    checkpoint_after_commit();
    batch.clear();
    taken.clear();  // freed before its budget is given back, so the cap bounds what is held
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue_bytes -= bytes;
      stats.records_committed += records;
      ++stats.transactions;
    }
    committed.notify_all();
    wake();  // budget came free: connections waiting for it may read again
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
  // The rank-ordered indexes (steps_by_rank, comms_by_session, the collectives' key) take each
  // rank's rows at its own place, so a commit touches a leaf page per rank and index: about 12 MB
  // at 1,024 ranks. SQLite's default 2 MB cache re-read those pages on every transaction (the
  // drop from 310k records/s at 64 ranks to 120k at 1,000); 48 KiB per rank keeps them resident.
  const int cache_kib = std::max(8192, impl_->options.world_size * 48);
  impl_->store.db().exec("PRAGMA cache_size = -" + std::to_string(cache_kib));
  impl_->store.db().watch_wal();
  impl_->checkpoint_db = std::make_unique<SqliteDb>(impl_->store.path(), false, false);
  impl_->writer = std::make_unique<StoreWriter>(impl_->store);
  impl_->writer->ensure_session(*impl_->session_uid);  // "running" from now on, even before RunStart
  impl_->running = true;
  impl_->checkpoint_thread = std::thread([this] { impl_->checkpoint_loop(); });
  impl_->writer_thread = std::thread([this] { impl_->writer_loop(); });
  impl_->io_thread = std::thread([this] { impl_->io_loop(); });
}

int Collector::port() const { return impl_->port; }

std::string Collector::address() const {
  const std::string& host = impl_->options.bind_host;
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;  // IPv6
  return shown + ":" + std::to_string(impl_->port);
}

void Collector::stop() {
  if (!impl_->running) return;
  impl_->stopping = true;
  impl_->wake();
  impl_->io_thread.join();
  impl_->writer_thread.join();
  impl_->stop_checkpointer();
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
