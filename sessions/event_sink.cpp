#include "sessions/event_sink.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "sessions/tcp_connect.hpp"

namespace shardscope::sessions {
namespace {

constexpr const char* kCollectorHint =
    ". The launcher hosts the collector and passes its address to every rank; start the run with "
    "`shardscope launch`, or run without a launcher so the rank writes its session file directly";

// A rank fails in seconds when nobody listens (tcp_connect.hpp), with the remedy.
int connect_with_timeout(const std::string& host, int port, int timeout_ms, const std::string& where) {
  try {
    return connect_tcp(host, port, timeout_ms);
  } catch (const SessionsError& e) {
    // A full listen backlog drops SYNs: a connect that times out meets a busy collector, not an absent one.
    if (std::string_view(e.what()).find("timed out") != std::string_view::npos)
      throw CollectorBusyError("cannot reach the ShardScope collector at " + where + ": " + e.what());
    throw CollectorNotListeningError("cannot reach the ShardScope collector at " + where + ": " + e.what() +
                                     kCollectorHint);
  }
}

bool ends_a_unit(const Event& event) {
  return std::holds_alternative<StepMetrics>(event) || std::holds_alternative<RunStart>(event) ||
         std::holds_alternative<RunEnd>(event) || std::holds_alternative<LogLine>(event);
}

}  // namespace

TcpEventSink::TcpEventSink(const TcpSinkOptions& options) : options_(options) {
  if (options.port <= 0 || options.port > 65535)
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "collector port " + std::to_string(options.port) + " is outside 1..65535");
  // A flood of connections that never prove anything makes the collector shed the oldest of them
  // and close new ones while all are young: a rank that meets that tries again, with backoff and
  // jitter, until the start-up deadline (docs/reliability.md, "Start-up under a flood").
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.startup_deadline_ms);
  std::minstd_rand jitter(static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(options.rank + 2));
  for (int delay_ms = 50;; delay_ms = std::min(2 * delay_ms, 2000)) {
    try {
      connect_and_prove();
      return;
    } catch (const CollectorBusyError& busy) {
      const auto wait = std::chrono::milliseconds(delay_ms / 2 + static_cast<int>(jitter() % (delay_ms / 2 + 1)));
      if (std::chrono::steady_clock::now() + wait > deadline)
        throw CollectorUnreachableError(std::string(busy.what()) + " (gave up after trying for " +
                                        std::to_string(options.startup_deadline_ms / 1000) + " s)");
      std::this_thread::sleep_for(wait);
    }
  }
}

void TcpEventSink::connect_and_prove() {
  const TcpSinkOptions& options = options_;
  fd_ = connect_with_timeout(options.host, options.port, options.connect_timeout_ms, where());
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  Hello hello;
  hello.rank = options.rank;
  hello.host = host;
  hello.pid = ::getpid();
  try {
    handshake_ = client_handshake(fd_, options.secret, hello, options.handshake_timeout_ms, where());
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    fd_ = -1;
    throw;
  }
}

TcpEventSink::~TcpEventSink() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor cannot report; close() is where callers learn of a lost collector.
  }
}

std::string TcpEventSink::where() const { return options_.host + ":" + std::to_string(options_.port); }

void TcpEventSink::send(const Event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) throw CollectorUnreachableError("event sink to " + where() + " is closed");
  encode_event(event, buffer_);
  if (buffer_.size() >= options_.buffer_bytes || ends_a_unit(event)) write_all_locked();
}

void TcpEventSink::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) write_all_locked();
}

void TcpEventSink::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  try {
    write_all_locked();
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  ::shutdown(fd_, SHUT_WR);
  ::close(fd_);
  fd_ = -1;
}

// Blocking writes: when the collector stops reading (its queue is full) the kernel's socket
// buffer fills and this waits. That is the back-pressure; nothing is dropped.
void TcpEventSink::write_all_locked() {
  std::size_t sent = 0;
  while (sent < buffer_.size()) {
    const ssize_t n = ::send(fd_, buffer_.data() + sent, buffer_.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw CollectorUnreachableError("lost the connection to the ShardScope collector at " + where() + ": " +
                                      std::strerror(errno) + " (" + std::to_string(buffer_.size() - sent) +
                                      " bytes of events unsent)");
    sent += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

struct FileEventSink::State {
  Store store;
  StoreWriter writer;
  std::shared_ptr<const std::string> uid;
  std::vector<SessionEvent> pending;
  explicit State(Store s, const std::string& session_uid)
      : store(std::move(s)), writer(store), uid(std::make_shared<const std::string>(session_uid)) {}
};

FileEventSink::FileEventSink(const FileSinkOptions& options) : options_(options) {
  if (options.session_uid.empty())
    throw SessionsError(ErrorKind::kInvalidArgument, "a session uid is required to write a session file");
  state_ = std::make_unique<State>(Store::open_or_create(options.db_path), options.session_uid);
  state_->writer.ensure_session(options.session_uid);
}

FileEventSink::~FileEventSink() {
  try {
    close();
  } catch (const std::exception&) {
    // Reported by an explicit close(); a destructor must not throw.
  }
}

void FileEventSink::send(const Event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!state_) throw SessionsError(ErrorKind::kInvalidArgument, "file sink " + options_.db_path + " is closed");
  state_->pending.push_back({state_->uid, event});
  if (state_->pending.size() >= options_.batch_events || ends_a_unit(event)) flush_locked();
}

void FileEventSink::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_) flush_locked();
}

void FileEventSink::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!state_) return;
  flush_locked();
  state_.reset();
}

void FileEventSink::flush_locked() {
  state_->writer.write(state_->pending);  // on failure the events stay pending for a retry
  state_->pending.clear();
}

std::pair<std::string, int> parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  auto bad = [&](const std::string& why) {
    return SessionsError(ErrorKind::kInvalidArgument,
                         "collector address '" + text + "' " + why + " (expected host:port, e.g. 127.0.0.1:29600)");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw bad("has no port");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5)
    throw bad("has a non-numeric port");
  const int port = std::stoi(port_text);
  if (port < 1 || port > 65535) throw bad("has a port outside 1..65535");
  return {host, port};
}

std::string new_session_uid() {
  std::random_device device;
  std::mt19937_64 generator((static_cast<std::uint64_t>(device()) << 32) ^ device());
  static const char* kHex = "0123456789abcdef";
  std::string uid;
  for (int i = 0; i < 2; ++i) {
    std::uint64_t v = generator();
    for (int j = 0; j < 16; ++j, v >>= 4) uid.push_back(kHex[v & 15]);
  }
  return uid;
}

}  // namespace shardscope::sessions
