// The collector's network thread: accepting, the handshake, bounded reads, and the checks that
// keep each connection to what it proved (collector_impl.hpp).
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "sessions/collector_handshake.hpp"
#include "sessions/collector_impl.hpp"
#include "sessions/errors.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::sessions {
namespace {

// What a decoded frame costs in memory, bounded from its header alone: every queued event is a
// QueuedEvent (store_writer.hpp: the kinds a step sends in place, about 250 bytes), and the rare
// kinds it boxes an Event besides (as large as its largest alternative, RunStart: 976 bytes); its
// strings copy at most its wire bytes (each with an allocation header), and each record of a batch
// is at most an ActivityRecord with its name's allocation. Issue 35 found the old bound (wire bytes
// + 96 per record) 4-6x below the real footprint of small frames: a "64 MiB" queue held 400-550 MB.
constexpr std::size_t kFrameFootprintBytes = sizeof(QueuedEvent) + 64;
constexpr std::size_t kBoxedEventBytes = sizeof(Event) + 64;
constexpr std::size_t kRecordFootprintBytes = sizeof(ActivityRecord) + 64;  // the largest record
constexpr std::size_t kMinFrameBytes = 5;  // length and type: no frame is shorter

// A record of a batch frame is an element of its vector (its strings' allocations are in the
// wire term); the frames a step sends one per record (step, collective, mark, log line) decode to
// the QueuedEvent alone, whose strings and group list copy at most their wire bytes. Charging
// every frame an ActivityRecord besides (the old bound) made a 5-timer frame cost 2 KB more than
// it holds and a mark 264 bytes more, so a 64 MiB queue took fewer records than it can hold and
// a 1,024-rank flood committed more often (docs/benchmarks.md, issue 35). Rarer frames (run
// start, host report, run end: vectors of ranks) are boxed and keep the old, larger term.
std::size_t record_footprint(std::uint8_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kActivityBatch: return sizeof(ActivityRecord) + 64;
    case FrameType::kNvtxBatch: return sizeof(NvtxRange) + 64;
    case FrameType::kTimerBreakdown: return sizeof(TimerValue) + 64;
    case FrameType::kStepMetrics:
    case FrameType::kCommRecord:
    case FrameType::kCollectiveMark:
    case FrameType::kLogLine: return 0;
    default: return kBoxedEventBytes + kRecordFootprintBytes;
  }
}

// Bytes charged to a frame of `length` payload bytes and this type while it waits for the writer.
std::size_t frame_share(std::size_t length, std::uint8_t type) {
  return 2 * (4 + length) + kFrameFootprintBytes + record_footprint(type) * max_records_in_frame(type, length);
}

// What a queued event holds once decoded, counted as glibc allocates it (8 bytes of header, 16-byte
// granules, 32 at least): its element of the chunk, and the heap behind its strings and vectors.
// The frame's share (above) is reserved before it is read, as the most it can cost; the chunk is
// then charged this, which for the frames a step sends is a half to two thirds of that bound (most
// of their strings fit in std::string's own 15 bytes), so the same cap queues more records for
// one transaction (docs/benchmarks.md, "shardscope-load", 2026-12-08). Boxed kinds keep the share.
std::size_t allocation_bytes(std::size_t n) { return std::max<std::size_t>(32, (n + 8 + 15) & ~std::size_t{15}); }
std::size_t heap_bytes(const std::string& s) {
  return s.capacity() > 15 ? allocation_bytes(s.capacity() + 1) : 0;  // libstdc++'s short-string buffer
}
template <class T>
std::size_t vector_heap_bytes(const std::vector<T>& v) {
  return v.capacity() ? allocation_bytes(v.capacity() * sizeof(T)) : 0;
}
std::size_t heap_bytes(const StepMetrics&) { return 0; }
std::size_t heap_bytes(const CommRecord& e) { return heap_bytes(e.op); }
std::size_t heap_bytes(const LogLine& e) { return heap_bytes(e.text); }
std::size_t heap_bytes(const CollectiveMark& e) {
  return heap_bytes(e.group) + vector_heap_bytes(e.group_ranks) + heap_bytes(e.op) + heap_bytes(e.dtype) +
         heap_bytes(e.phase) + heap_bytes(e.tag);
}
std::size_t heap_bytes(const TimerBreakdown& e) {
  std::size_t n = vector_heap_bytes(e.timers);
  for (const auto& t : e.timers) n += heap_bytes(t.name);
  return n;
}
std::size_t heap_bytes(const ActivityBatch& e) {
  std::size_t n = vector_heap_bytes(e.records);
  for (const auto& a : e.records) n += heap_bytes(a.name);
  return n;
}
std::size_t heap_bytes(const NvtxBatch& e) {
  std::size_t n = vector_heap_bytes(e.ranges);
  for (const auto& r : e.ranges) n += heap_bytes(r.name) + heap_bytes(r.domain) + heap_bytes(r.shapes);
  return n;
}

// The memory `event` holds in a chunk; `share` (the frame's bound) for the boxed kinds.
std::size_t queued_bytes(const QueuedEvent& event, std::size_t share) {
  return std::visit(
      [&](const auto& e) -> std::size_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, std::unique_ptr<const Event>>) return share;
        else return kFrameFootprintBytes + heap_bytes(e);
      },
      event);
}

constexpr std::size_t kReadChunk = 64u << 10;
// At a frame boundary a connection reads up to this much at once instead of a header and then its
// frame: one recv for dozens of small frames (two per frame cost half the network thread at 1,024
// ranks). Its worst case is reserved before the read: the bytes, plus the decoded overhead of the
// most frames and records they can hold (frame_share of kMinFrameBytes frames of a boxed kind).
constexpr std::size_t kReadAhead = 8u << 10;
constexpr std::size_t kReadAheadCharge =
    2 * kReadAhead +
    (kFrameFootprintBytes + kBoxedEventBytes + kRecordFootprintBytes) * (kReadAhead / kMinFrameBytes + 1);
constexpr std::size_t kMaxReadPerTurn = 1u << 20;  // fairness: one busy rank cannot starve others

// A handshake that must end the connection: the peer did not prove it belongs to the run.
class HandshakeRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string peer_name(const sockaddr_storage& address) {
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&address), sizeof address, host, sizeof host, port,
                sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}


// Keepalive probes find half-open connections (a rank's host lost power or its link), which a
// silent socket would otherwise keep forever.
void set_keepalive(int fd, const CollectorOptions& o) {
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &o.keepalive_idle_s, sizeof o.keepalive_idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &o.keepalive_interval_s, sizeof o.keepalive_interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &o.keepalive_probes, sizeof o.keepalive_probes);
  const unsigned user_timeout_ms =
      static_cast<unsigned>(o.keepalive_idle_s + o.keepalive_interval_s * o.keepalive_probes) * 1000u;
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

// The whole of a small frame on a fresh non-blocking socket (its send buffer is empty).
bool send_small(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(bytes.size());
}

// The rank an event speaks for; nullopt for run-level events (RunStart, RunEnd, SessionOrigin, HostReport,
// Finding).
std::optional<int> event_rank(const Event& event) {
  return std::visit(
      [](const auto& e) -> std::optional<int> {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunStart> || std::is_same_v<T, RunEnd> || std::is_same_v<T, SessionOrigin> ||
                      std::is_same_v<T, HostReport> || std::is_same_v<T, Finding>)
          return std::nullopt;
        else
          return e.rank;
      },
      event);
}

const char* event_name(const Event& event) {
  static const char* kNames[] = {"RunStart", "StepMetrics", "TimerBreakdown", "CommRecord",  "ActivityBatch",
                                 "NvtxBatch", "LogLine",     "RunEnd",         "SeriesPoint", "CommSummary",
                                 "SessionOrigin", "HostReport", "CollectiveMark", "Finding"};
  static_assert(std::size(kNames) == std::variant_size_v<Event>, "a name for every event type");
  return kNames[event.index()];
}

}  // namespace

std::string CollectorConnection::who() const {
  std::string name = rank == -2   ? std::string("unproven peer")
                     : rank == -1 ? std::string("launcher")
                                  : "rank " + std::to_string(rank);
  return name + " (" + (host.empty() ? peer : host + ", " + peer) + ")";
}

std::size_t Collector::Impl::handshakes_open() const { return unproven; }

bool Collector::Impl::budget_exhausted() const {
  std::lock_guard<std::mutex> lock(mutex);
  return queue_bytes + reserved_bytes >= options.max_queue_bytes;
}

bool Collector::Impl::shed_oldest_unproven(const std::string& address) {
  const auto young = CollectorClock::now() - std::chrono::milliseconds(options.handshake_grace_ms);
  // The list is in order of arrival, so the first match is the oldest.
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    if (it->proven || (!address.empty() && it->address != address)) continue;
    if (it->accepted_at > young) return false;  // all the others are younger still
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.connections_shed;
    }
    close_connection(it, "had not proven itself when newer connections needed its place; closed",
                     CollectorLogLevel::kInfo, true);
    return true;
  }
  return false;
}

// When every unproven connection is younger than the grace (a flood that reconnects as fast as it
// is closed), one of them chosen at random makes room: refusing the newcomer instead would refuse
// every rank for as long as the flood lasts, while a rank's connection, shed at random, survives
// the few arrivals of its one round trip with high odds (255/256 each).
void Collector::Impl::shed_random_unproven(const std::string& address) {
  std::vector<std::list<CollectorConnection>::iterator> candidates;
  for (auto it = connections.begin(); it != connections.end(); ++it)
    if (!it->proven && (address.empty() || it->address == address)) candidates.push_back(it);
  if (candidates.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.connections_shed;
  }
  close_connection(candidates[shed_choice() % candidates.size()],
                   "had not proven itself when newer connections needed its place; closed", CollectorLogLevel::kInfo,
                   true);
}

void Collector::Impl::make_handshake_room(const std::string& address) {
  std::size_t same_address = 0;
  for (const auto& c : connections) same_address += !c.proven && c.address == address;
  if (same_address >= options.max_handshakes_per_address && !shed_oldest_unproven(address))
    shed_random_unproven(address);
  if (unproven >= options.max_handshakes && !shed_oldest_unproven("")) shed_random_unproven("");
}

// Accepts everything waiting: a connection that waits in the listen backlog cannot be told apart
// from an attacker's, so nothing is left there while descriptors last; unproven peers are limited
// by shedding instead (make_handshake_room).
void Collector::Impl::accept_all() {
  if (CollectorClock::now() < accept_paused_until) return;
  while (connections.size() < options.max_connections) {
    sockaddr_storage address{};
    socklen_t len = sizeof address;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&address), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && shed_oldest_unproven("")) continue;
      if (errno == EMFILE || errno == ENFILE) accept_paused_until = CollectorClock::now() + std::chrono::milliseconds(100);
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        log(CollectorLogLevel::kError, std::string("accept failed: ") + std::strerror(errno));
      return;
    }
    CollectorConnection c;
    c.fd = fd;
    c.peer = peer_name(address);
    c.address = c.peer.substr(0, c.peer.rfind(':'));
    make_handshake_room(c.address);
    set_keepalive(fd, options);
    c.server_nonce = random_nonce();
    c.accepted_at = CollectorClock::now();
    c.handshake_deadline = c.accepted_at + std::chrono::milliseconds(options.handshake_timeout_ms);
    std::string challenge;
    encode_challenge(Challenge{kProtocolVersion, c.server_nonce}, challenge);
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.connections_accepted;
    if (!send_small(fd, challenge)) {
      ::close(fd);
      ++stats.connections_refused;
      continue;
    }
    connections.push_back(std::move(c));
    ++unproven;
    ++stats.connections_open;
  }
}

void Collector::Impl::close_connection(std::list<CollectorConnection>::iterator it, const std::string& why,
                                       CollectorLogLevel level, bool refused) {
  // A flood of unproven connections would bury the run's own messages: the first refusals are
  // warnings, the rest are counted (CollectorStats) and logged at info level.
  constexpr std::uint64_t kRefusalsWarned = 20;
  if (refused && level == CollectorLogLevel::kWarning && ++refusals_warned > kRefusalsWarned) {
    if (refusals_warned == kRefusalsWarned + 1)
      log(CollectorLogLevel::kWarning, "more connections refused; they are counted, not each logged");
    level = CollectorLogLevel::kInfo;
  }
  log(level, it->who() + ": " + why +
                 (refused ? "; nothing from it was recorded"
                          : "; " + std::to_string(it->records) + " records from it were kept"));
  ::close(it->fd);
  if (!it->proven) --unproven;
  std::lock_guard<std::mutex> lock(mutex);
  reserved_bytes -= it->reserved + it->partial_charge;  // a frame cut short gives its share back
  partial_bytes -= it->partial_charge;
  if (refused) ++stats.connections_refused;
  else if (level != CollectorLogLevel::kInfo) ++stats.connections_rejected;
  --stats.connections_open;
  connections.erase(it);
}

// A rank proves itself with its own key (run_secret.hpp: rank_key), so a key read out of one rank
// proves only that rank; and one rank reports on one connection, so a second one claiming a rank
// that is live is refused (a launcher, rank -1, may join from every host).
void Collector::Impl::admit_hello(CollectorConnection& c, const Hello& hello) {
  if (hello.protocol_version != kProtocolVersion)
    throw HandshakeRefused("speaks protocol version " + std::to_string(hello.protocol_version) +
                           ", this collector speaks " + std::to_string(kProtocolVersion) +
                           " (rank and launcher come from different builds)");
  c.rank = hello.rank;
  c.host = hello.host;
  c.pid = hello.pid;
  if (hello.rank < -1 || (options.world_size > 0 && hello.rank >= options.world_size))
    throw HandshakeRefused("claims rank " + std::to_string(hello.rank) + ", but the run's ranks are 0.." +
                           std::to_string(options.world_size - 1) + " (and -1 for a launcher)");
  const std::string key = rank_key(options.secret, hello.rank);
  if (!proofs_equal(hello.proof, hello_proof(key, c.server_nonce, hello)))
    throw HandshakeRefused("did not prove it holds the key of the rank it claims (wrong, missing, another rank's "
                           "or another run's)");
  if (hello.rank >= 0)
    for (const auto& other : connections)
      if (&other != &c && other.proven && other.rank == hello.rank)
        throw HandshakeRefused("claims rank " + std::to_string(hello.rank) + ", which is already connected as " +
                               other.who() + "; a rank reports on one connection");
  Welcome welcome{*session_uid, unix_now(), {}};
  welcome.proof = welcome_proof(key, hello.client_nonce, c.server_nonce, welcome);
  std::string bytes;
  encode_welcome(welcome, bytes);
  if (!send_small(c.fd, bytes)) throw HandshakeRefused("could not be sent its welcome");
  c.proven = true;
  --unproven;
  c.decoder.set_max_frame_bytes(kMaxFrameBytes);
}

// Reads the Hello exactly (at most kMaxHandshakeFrameBytes): nothing beyond it is buffered.
void Collector::Impl::read_handshake(CollectorConnection& c) {
  char buffer[kMaxHandshakeFrameBytes + 8];
  while (!c.proven) {
    std::size_t want = 0;
    try {
      want = c.decoder.bytes_wanted();
    } catch (const ProtocolError& e) {
      throw HandshakeRefused(std::string("sent a first frame that is not a Hello (") + e.what() + ")");
    }
    const ssize_t n = ::recv(c.fd, buffer, want, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      throw HandshakeRefused(n == 0 ? "disconnected before proving it belongs to the run"
                                    : std::string("failed during the handshake: ") + std::strerror(errno));
    }
    c.decoder.feed(buffer, static_cast<std::size_t>(n));
    Frame frame;
    bool complete = false;
    try {
      complete = c.decoder.next(frame);
    } catch (const ProtocolError& e) {
      throw HandshakeRefused(std::string("sent a malformed Hello (") + e.what() + ")");
    }
    if (!complete) continue;
    const auto* hello = std::get_if<Hello>(&frame);
    if (!hello) throw HandshakeRefused("sent another frame before a Hello proving it belongs to the run");
    admit_hello(c, *hello);
  }
}

void Collector::Impl::check_event(const CollectorConnection& c, const Event& event) const {
  const auto rank = event_rank(event);
  if (const auto* f = std::get_if<Finding>(&event); f && c.rank >= 0) {
    // A rank may report what it found about itself (an out-of-memory step), naming no other rank.
    if (f->ranks != std::vector<int>{c.rank})
      throw ProtocolError("a Finding from rank " + std::to_string(c.rank) +
                          " that names other ranks; a rank reports findings about itself only");
    return;
  }
  if (!rank) {
    if (c.rank != -1)
      throw ProtocolError(std::string("a ") + event_name(event) + " from rank " + std::to_string(c.rank) +
                          "; only a launcher (rank -1) starts, describes or ends the run");
    return;
  }
  if (c.rank == -1) {
    if (!std::holds_alternative<LogLine>(event))
      throw ProtocolError(std::string("a ") + event_name(event) + " of rank " + std::to_string(*rank) +
                          " from a launcher, which relays only log lines of other ranks");
    if (*rank < -1 || (options.world_size > 0 && *rank >= options.world_size))
      throw ProtocolError("a log line of rank " + std::to_string(*rank) + ", which the run does not have");
    return;
  }
  if (*rank != c.rank)
    throw ProtocolError(std::string("a ") + event_name(event) + " of rank " + std::to_string(*rank) +
                        " on the connection of rank " + std::to_string(c.rank) +
                        " (a connection reports only for the rank it proved)");
}

bool Collector::Impl::reserve_frame(CollectorConnection& c) {
  const auto header = c.decoder.pending_header();
  const std::size_t need = frame_share(header->length, header->type);
  std::lock_guard<std::mutex> lock(mutex);
  const std::size_t own = c.partial_charge;  // bytes of this frame already read and charged
  const std::size_t held = queue_bytes + reserved_bytes - own;
  // A frame whose own share exceeds the cap can only ever go alone (with, at most, other
  // connections' partial frames, which wait for budget too and must not block it forever).
  if (held > partial_bytes - own && held + need > options.max_queue_bytes) {
    if (!c.waiting_for_budget) ++stats.backpressure_pauses;
    c.waiting_for_budget = true;
    return false;
  }
  reserved_bytes += need - own;
  partial_bytes -= own;
  c.partial_charge = 0;
  stats.queue_bytes_peak = std::max(stats.queue_bytes_peak, queue_bytes + reserved_bytes);
  c.reserved = need;
  c.waiting_for_budget = false;
  return true;
}

// Read-aheads leave their unfinished frames charged; together those stay under a quarter of the
// cap, so frames waiting for budget always find some once the writer drains the queue.
std::size_t Collector::Impl::reserve_read_ahead(std::size_t& charge) {
  std::lock_guard<std::mutex> lock(mutex);
  const std::size_t cap = options.max_queue_bytes;
  if (queue_bytes + reserved_bytes + kReadAheadCharge > cap || partial_bytes + kReadAhead > cap / 4) return 0;
  reserved_bytes += kReadAheadCharge;
  stats.queue_bytes_peak = std::max(stats.queue_bytes_peak, queue_bytes + reserved_bytes);
  charge = kReadAheadCharge;
  return kReadAhead;
}

// Reads what the socket has, in one of two ways. At a frame boundary with budget to spare, a
// read-ahead of up to kReadAhead bytes (its worst case reserved first) decodes every whole frame
// it holds and leaves the start of the next one charged byte for byte. Otherwise it reads exactly
// up to the end of the frame being assembled, whose share of the budget is reserved before its
// first payload byte is read. Either way a connection holds at most one unfinished frame.
Collector::Impl::ReadEnd Collector::Impl::read_events(CollectorConnection& c, CollectorChunk& chunk,
                                                     std::string& failure) {
  char buffer[kReadChunk];
  std::size_t read_total = 0, released = 0, partial_added = 0, ahead = 0;
  bool eof = false;
  // Queues what was read and wakes the writer for it, on every way out: good frames read before
  // garbage are kept, and a chunk queued without a wake-up would wait for another rank's read.
  auto account = [&] {
    if (ahead > 0) {  // the read-ahead's worst case gives way to what it left unfinished
      released += std::exchange(ahead, 0);
      c.partial_charge = c.decoder.buffered_bytes();
      partial_added += c.partial_charge;
    }
    const bool queued = !chunk.events.empty();
    bool wake_writer = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stats.bytes_received += read_total;
      stats.frames_received += chunk.events.size();
      stats.records_received += chunk.records;
      reserved_bytes = reserved_bytes + partial_added - released;
      partial_bytes += partial_added;
      if (queued) {
        // The writer waits for the first chunk, then for a full batch (writer_loop): wake it
        // then, not for every chunk in between (a futex wake per read at 1,024 ranks).
        const std::size_t before = queue_bytes;
        queue_bytes += chunk.bytes;
        wake_writer = queue.empty() || (before < batch_gather_bytes() && queue_bytes >= batch_gather_bytes());
        queue.push_back(std::move(chunk));
      }
      stats.queue_bytes_peak = std::max(stats.queue_bytes_peak, queue_bytes + reserved_bytes);
    }
    if (wake_writer) items_ready.notify_one();
    chunk = CollectorChunk{};
    read_total = released = partial_added = 0;
  };
  auto take_frame = [&] {
    const auto header = *c.decoder.pending_header();
    Frame frame;
    c.decoder.next(frame);
    auto* event = std::get_if<Event>(&frame);
    if (!event) throw ProtocolError("a handshake frame after the handshake");
    check_event(c, *event);
    if (options.observe) options.observe(*event);
    const std::size_t records = event_record_count(*event);
    chunk.records += records;
    c.records += records;
    chunk.events.push_back(queued_event(std::move(*event)));
    const std::size_t share = frame_share(header.length, header.type);
    const std::size_t held = queued_bytes(chunk.events.back(), share);
    assert(held <= share && "a frame's share must bound what it decodes to");
    chunk.bytes += held;
  };
  std::size_t turn_total = 0;
  try {
    while (turn_total < kMaxReadPerTurn) {
      std::size_t want = c.decoder.bytes_wanted();
      const bool at_boundary = c.reserved == 0 && c.partial_charge == 0 && c.decoder.buffered_bytes() == 0;
      if (at_boundary && (want = reserve_read_ahead(ahead)) == 0) want = c.decoder.bytes_wanted();
      if (ahead == 0 && c.reserved == 0 && c.decoder.pending_header() && !reserve_frame(c)) break;
      const ssize_t n = ::recv(c.fd, buffer, std::min(want, sizeof buffer), 0);
      if (n == 0) eof = true;
      if (n < 0 && errno == EINTR) {
        if (ahead > 0) account();
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        failure = errno == ETIMEDOUT ? "its host stopped answering (keepalive timed out: a half-open connection)"
                                     : std::string("connection failed: ") + std::strerror(errno);
      if (n <= 0) break;
      read_total += static_cast<std::size_t>(n);
      turn_total += static_cast<std::size_t>(n);
      c.decoder.feed(buffer, static_cast<std::size_t>(n));
      if (ahead > 0) {
        while (c.decoder.buffered_bytes() >= 5 && c.decoder.bytes_wanted() == 0) take_frame();
        account();
        continue;
      }
      if (c.decoder.bytes_wanted() != 0) continue;
      take_frame();
      released += std::exchange(c.reserved, 0);
    }
  } catch (const ProtocolError& e) {
    account();
    throw;
  }
  account();
  if (!failure.empty()) return ReadEnd::kFailed;
  return eof ? ReadEnd::kEndOfStream : ReadEnd::kOpen;
}

void Collector::Impl::read_connection(std::list<CollectorConnection>::iterator it) {
  CollectorConnection& c = *it;
  ReadEnd end = ReadEnd::kOpen;
  std::string failure;
  try {
    if (!c.proven) read_handshake(c);
    if (!c.proven) return;
    CollectorChunk chunk;
    end = read_events(c, chunk, failure);
  } catch (const HandshakeRefused& e) {
    close_connection(it, std::string("refused: it ") + e.what(), CollectorLogLevel::kWarning, true);
    return;
  } catch (const ProtocolError& e) {
    close_connection(it, std::string("sent garbage (") + e.what() + "); connection closed", CollectorLogLevel::kWarning,
                     false);
    return;
  }
  if (end == ReadEnd::kFailed) {
    close_connection(it, failure, CollectorLogLevel::kWarning, false);
  } else if (end == ReadEnd::kEndOfStream && c.decoder.buffered_bytes() > 0) {
    close_connection(it, "disconnected in the middle of a frame (" + std::to_string(c.decoder.buffered_bytes()) +
                             " bytes of an incomplete frame discarded)", CollectorLogLevel::kWarning, false);
  } else if (end == ReadEnd::kEndOfStream) {
    close_connection(it, "disconnected", CollectorLogLevel::kInfo, false);
  }
}

void Collector::Impl::drop_expired_handshakes() {
  const auto now = CollectorClock::now();
  for (auto it = connections.begin(); it != connections.end();) {
    auto next = std::next(it);
    if (!it->proven && now >= it->handshake_deadline)
      close_connection(it, "did not finish the handshake within " + std::to_string(options.handshake_timeout_ms) +
                               " ms (an idle connection, or not a ShardScope rank); closed",
                       CollectorLogLevel::kWarning, true);
    it = next;
  }
}

int Collector::Impl::poll_timeout_ms(bool paused, bool draining) const {
  long long timeout = paused ? 50 : draining ? options.drain_idle_ms : -1;
  const auto now = CollectorClock::now();
  if (now < accept_paused_until) timeout = 100;  // out of descriptors: look again shortly
  for (const auto& c : connections) {
    if (c.proven) continue;
    const long long left =
        std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(c.handshake_deadline - now).count() + 1);
    timeout = timeout < 0 ? left : std::min(timeout, left);
  }
  return static_cast<int>(timeout);
}

void Collector::Impl::io_loop() {
  std::vector<pollfd> fds;
  std::vector<std::list<CollectorConnection>::iterator> owners;
  bool was_paused = false, backlog_taken = false;
  while (true) {
    const bool draining = stopping.load();
    if (draining && !backlog_taken) {
      // Ranks whose connect() completed before stop() wait in the listen backlog; their events
      // count as arrived, so take them in before draining.
      accept_all();
      backlog_taken = true;
    }
    if (draining && connections.empty()) break;
    const bool paused = budget_exhausted();
    if (paused && !was_paused) {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.backpressure_pauses;
    }
    was_paused = paused;
    fds.assign(1, pollfd{wake_read, POLLIN, 0});
    owners.assign(1, connections.end());
    const bool room = connections.size() < options.max_connections && CollectorClock::now() >= accept_paused_until;
    if (!draining && room) {
      fds.push_back({listen_fd, POLLIN, 0});
      owners.push_back(connections.end());
    }
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      // A proven connection reads on while it holds a reservation; otherwise it needs new budget.
      const bool readable = !it->proven || it->reserved > 0 || (!paused && !it->waiting_for_budget) ||
                            (it->waiting_for_budget && reserve_frame(*it));
      fds.push_back({it->fd, static_cast<short>(readable ? POLLIN : 0), 0});
      owners.push_back(it);
    }
    const int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms(paused, draining));
    if (rc < 0 && errno != EINTR) {
      log(CollectorLogLevel::kError, std::string("poll failed: ") + std::strerror(errno));
      break;
    }
    if (rc == 0 && draining && !paused) {
      while (!connections.empty())
        close_connection(connections.begin(), "still connected but silent at shutdown; closed",
                         CollectorLogLevel::kWarning, !connections.begin()->proven);
      break;
    }
    if (fds[0].revents & POLLIN) {
      char sink[256];
      while (::read(wake_read, sink, sizeof sink) > 0) {
      }
    }
    const bool accept_ready = fds.size() > 1 && owners[1] == connections.end() && fds[1].fd == listen_fd &&
                              (fds[1].revents & POLLIN);
    for (std::size_t i = 1; i < fds.size(); ++i)
      if (owners[i] != connections.end() && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) read_connection(owners[i]);
    if (accept_ready) accept_all();
    drop_expired_handshakes();
  }
  std::lock_guard<std::mutex> lock(mutex);
  io_done = true;
  items_ready.notify_all();
}

}  // namespace shardscope::sessions
