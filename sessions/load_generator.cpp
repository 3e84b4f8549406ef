// shardscope-load's ranks (load_generator.hpp): connect, prove, then stream steps over
// non-blocking sockets multiplexed by a few sender threads.
#include "sessions/load_generator.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "sessions/collector_handshake.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/tcp_connect.hpp"

namespace shardscope::sessions {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string where(const LoadOptions& o) { return o.host + ":" + std::to_string(o.port); }

// One played rank: its socket, the bytes of its current step, and its schedule.
struct PlayedRank {
  int rank = 0;
  int fd = -1;
  std::string out;
  std::size_t sent = 0;
  std::int64_t next = 0;        ///< the index of the next step to encode
  Clock::time_point due;        ///< when that step starts
  bool blocked = false;
  Clock::time_point blocked_since;
  double blocked_s = 0;
  double worst_lag_ms = 0;
};

// Connects and proves rank `rank` as a launched rank would (TcpEventSink's path), retrying a busy
// collector with backoff until the start-up deadline; returns the non-blocking socket.
int connect_rank(const LoadOptions& o, int rank) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(o.startup_deadline_ms);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string key = rank_key(o.secret, rank);
  for (int delay_ms = 50;; delay_ms = std::min(2 * delay_ms, 2000)) {
    int fd = -1;
    try {
      fd = connect_tcp(o.host, o.port, 5000);
      Hello hello;
      hello.rank = rank;
      hello.host = host;
      hello.pid = ::getpid();
      client_handshake(fd, key, hello, 5000, where(o));
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      return fd;
    } catch (const CollectorBusyError& busy) {
      if (fd >= 0) ::close(fd);
      if (Clock::now() + std::chrono::milliseconds(delay_ms) > deadline)
        throw CollectorUnreachableError("rank " + std::to_string(rank) + ": " + busy.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    } catch (const SessionsError& e) {
      if (fd >= 0) ::close(fd);
      throw CollectorUnreachableError("rank " + std::to_string(rank) + " of shardscope-load: " + e.what());
    }
  }
}

// What the ranks of one sender thread share with the others: the start signal and the totals.
struct Shared {
  std::mutex mutex;
  std::condition_variable go;
  int connected = 0;
  bool started = false;
  Clock::time_point start;
  std::exception_ptr error;
  LoadResult totals;
};

class Sender {
 public:
  Sender(const LoadScript& script, const LoadOptions& o, Shared& shared) : script_(script), o_(o), shared_(shared) {}

  void connect(int first) {
    for (int r = first; r < o_.ranks; r += std::max(1, o_.threads)) {
      PlayedRank p;
      p.rank = r;
      p.fd = connect_rank(o_, r);
      ranks_.push_back(std::move(p));
    }
  }

  void play(Clock::time_point start) {
    for (auto& p : ranks_) p.due = start;
    std::size_t open = ranks_.size();
    while (open > 0) {
      bool progress = false;
      const auto now = Clock::now();
      for (auto& p : ranks_) progress |= turn(p, now, open);
      if (!progress) wait(now);
    }
  }

  void add_to(LoadResult& totals) const {
    totals.records_sent += records_;
    totals.frames_sent += frames_;
    totals.bytes_sent += bytes_;
    for (const auto& p : ranks_) {
      totals.max_blocked_s = std::max(totals.max_blocked_s, p.blocked_s);
      totals.mean_blocked_s += p.blocked_s;
      totals.worst_lag_ms = std::max(totals.worst_lag_ms, p.worst_lag_ms);
    }
  }

  ~Sender() {
    for (auto& p : ranks_)
      if (p.fd >= 0) ::close(p.fd);
  }

 private:
  // One round for one rank: start its next step when it is due and its last one is out, then
  // send what the socket takes. True when anything moved.
  bool turn(PlayedRank& p, Clock::time_point now, std::size_t& open) {
    if (p.fd < 0) return false;
    bool progress = false;
    if (p.sent == p.out.size()) {
      p.out.clear();
      p.sent = 0;
      if (p.next >= o_.steps) {
        ::shutdown(p.fd, SHUT_WR);
        ::close(p.fd);
        p.fd = -1;
        --open;
        return true;
      }
      if (p.due > now) return false;
      encode_step(p, now);
      progress = true;
    }
    const ssize_t n = ::send(p.fd, p.out.data() + p.sent, p.out.size() - p.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p.sent += static_cast<std::size_t>(n);
      bytes_ += static_cast<std::uint64_t>(n);
      if (p.blocked) p.blocked_s += seconds_between(p.blocked_since, now);
      p.blocked = false;
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!p.blocked) p.blocked_since = now;
      p.blocked = true;
      return progress;
    }
    throw CollectorUnreachableError("rank " + std::to_string(p.rank) + " of shardscope-load lost the collector at " +
                                    where(o_) + ": " + std::strerror(errno));
  }

  void encode_step(PlayedRank& p, Clock::time_point now) {
    if (o_.step_ms > 0 || o_.recorded_pace) p.worst_lag_ms = std::max(p.worst_lag_ms, seconds_between(p.due, now) * 1e3);
    scratch_.clear();
    script_.step_events(p.rank, o_.ranks, p.next, scratch_);
    for (const auto& e : scratch_) {
      encode_event(e, p.out);
      records_ += event_record_count(e);
    }
    frames_ += scratch_.size();
    const double ms = o_.recorded_pace ? script_.recorded_step_ms(p.rank, p.next) / o_.speed : o_.step_ms;
    p.due = ms > 0 ? p.due + std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000)) : now;
    ++p.next;
  }

  // Nothing moved: wait for a full socket to drain or the next step to fall due.
  void wait(Clock::time_point now) {
    fds_.clear();
    auto next_due = Clock::time_point::max();
    for (const auto& p : ranks_) {
      if (p.fd < 0) continue;
      if (p.sent < p.out.size()) fds_.push_back({p.fd, POLLOUT, 0});
      else if (p.next < o_.steps) next_due = std::min(next_due, p.due);
    }
    int timeout_ms = 100;
    if (next_due != Clock::time_point::max())
      timeout_ms = static_cast<int>(std::clamp<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next_due - now).count() + 1, 0, 100));
    ::poll(fds_.data(), fds_.size(), timeout_ms);
  }

  const LoadScript& script_;
  const LoadOptions& o_;
  Shared& shared_;
  std::vector<PlayedRank> ranks_;
  std::vector<Event> scratch_;
  std::vector<pollfd> fds_;
  std::uint64_t records_ = 0, frames_ = 0, bytes_ = 0;
};

// The launcher's part (rank -1): only a launcher may start and end a run.
void announce(const LoadOptions& o, const Event& event) {
  TcpSinkOptions sink_options;
  sink_options.host = o.host;
  sink_options.port = o.port;
  sink_options.secret = rank_key(o.secret, -1);
  sink_options.rank = -1;
  sink_options.startup_deadline_ms = o.startup_deadline_ms;
  TcpEventSink sink(sink_options);
  sink.send(event);
  sink.close();
}

RunEnd run_end(const LoadOptions& o, double wall_s) {
  RunEnd end{"completed", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
             wall_s, {}};
  for (int r = 0; r < o.ranks; ++r) end.exit_codes.push_back({r, 0});
  return end;
}

}  // namespace

LoadResult run_load(const LoadScript& script, const LoadOptions& o) {
  if (o.ranks <= 0 || o.steps < 0 || o.threads <= 0 || o.speed <= 0)
    throw SessionsError(ErrorKind::kInvalidArgument, "shardscope-load needs ranks > 0, steps >= 0, threads > 0, speed > 0");
  std::uint64_t launcher_records = 0;
  if (o.announce_run) {
    const Event start = script.run_start(o.ranks);
    announce(o, start);
    launcher_records += event_record_count(start);
  }
  Shared shared;
  const int threads = std::min(o.threads, o.ranks);
  std::vector<std::thread> workers;
  const auto connect_start = Clock::now();
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      Sender sender(script, o, shared);
      try {
        sender.connect(t);
        std::unique_lock<std::mutex> lock(shared.mutex);
        if (++shared.connected == threads) {
          shared.started = true;
          shared.start = Clock::now();
          shared.go.notify_all();
        }
        shared.go.wait(lock, [&] { return shared.started || shared.error; });
        if (shared.error) return;
        const auto start = shared.start;
        lock.unlock();
        sender.play(start);
        lock.lock();
        sender.add_to(shared.totals);
      } catch (...) {
        std::lock_guard<std::mutex> lock(shared.mutex);
        if (!shared.error) shared.error = std::current_exception();
        shared.go.notify_all();
      }
    });
  for (auto& w : workers) w.join();
  if (shared.error) std::rethrow_exception(shared.error);
  LoadResult result = shared.totals;
  result.connect_s = seconds_between(connect_start, shared.start);
  result.send_s = seconds_between(shared.start, Clock::now());
  result.mean_blocked_s /= o.ranks;
  if (o.announce_run) {
    const Event end = run_end(o, result.connect_s + result.send_s);
    announce(o, end);
    launcher_records += event_record_count(end);
  }
  result.records_sent += launcher_records;
  return result;
}

}  // namespace shardscope::sessions
