// libFuzzer target: the event decoder fed into a live collector and its store. Each input is the
// byte stream a rank sends after its connection setup: first decoded in-process (fast, so the
// codec sees most inputs), then sent over TCP to one Collector running for the whole fuzzing
// run, which must log and close a bad connection, commit a good one and go idle, never crash or
// hang (a batch it could never commit would be retried forever). Every 500 inputs the store must
// pass PRAGMA integrity_check.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "sessions/collector.hpp"
#include "sessions/collector_handshake.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/tcp_connect.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace shardscope::sessions;

// The fuzzer's run: its session and secret, known to the collector and to connect_as_rank.
constexpr const char* kFuzzSession = "fuzz-session";
constexpr const char* kFuzzSecret = "fuzz-run-secret-0123456789abcdef";

// A rank's connection past the collector's challenge-response (client_handshake), so the fuzzed
// bytes reach the decoder and the store as a proven rank's events would.
int connect_as_rank(int port, int rank) {
  int fd = -1;
  try {
    fd = connect_tcp("127.0.0.1", port, 5000);
  } catch (const std::exception& e) {
    shardscope::fuzz::fail(std::string("cannot connect to the collector: ") + e.what());
  }
  Hello hello;
  hello.rank = rank;
  hello.host = "fuzz-host";
  hello.pid = ::getpid();
  try {
    client_handshake(fd, rank_key(kFuzzSecret, rank), hello, 5000, "127.0.0.1:" + std::to_string(port));
  } catch (const std::exception& e) {
    shardscope::fuzz::fail(std::string("the handshake failed: ") + e.what());
  }
  return fd;
}

struct LiveCollector {
  std::string db_path;
  std::unique_ptr<Collector> collector;
};

LiveCollector& live_collector() {
  static LiveCollector live = [] {
    char folder[] = "/tmp/shardscope-fuzz-collector-XXXXXX";
    if (!::mkdtemp(folder)) shardscope::fuzz::fail("mkdtemp");
    LiveCollector l;
    l.db_path = std::string(folder) + "/collector.db";
    CollectorOptions options;
    options.db_path = l.db_path;
    options.session_uid = kFuzzSession;
    options.secret = kFuzzSecret;
    options.drain_idle_ms = 50;
    // Bad connections are expected; SHARDSCOPE_FUZZ_LOG=1 shows what the collector says of them.
    options.log = [](CollectorLogLevel, const std::string& text) {
      if (std::getenv("SHARDSCOPE_FUZZ_LOG")) std::fprintf(stderr, "collector: %s\n", text.c_str());
    };
    l.collector = std::make_unique<Collector>(options);
    l.collector->start();
    return l;
  }();
  return live;
}

void decode_in_process(const std::uint8_t* data, std::size_t size) {
  FrameDecoder decoder;
  decoder.feed(reinterpret_cast<const char*>(data), size);
  try {
    Frame frame;
    while (decoder.next(frame)) {
    }
  } catch (const ProtocolError&) {
  }
}

void check_store_integrity(const std::string& path) {
  SqliteDb db(path, false, true);
  const std::string result = db.query_text("PRAGMA integrity_check");
  if (result != "ok") shardscope::fuzz::fail("the collector's store failed integrity_check: " + result);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  decode_in_process(data, size);
  LiveCollector& live = live_collector();
  const int fd = connect_as_rank(live.collector->port(), static_cast<int>(size % 4));
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's timer signal
    if (n <= 0) break;  // the collector closed a connection it found broken: that is its job
    sent += static_cast<std::size_t>(n);
  }
  ::close(fd);
  // Commits are checked only once the collector has read this input to its end (it closes the
  // connection then): waiting earlier could pass before the events were even received.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(9);  // libFuzzer's -timeout=10
  while (live.collector->stats().connections_open > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (!live.collector->wait_until_committed(static_cast<int>(std::max<std::int64_t>(0, left.count())))) {
    const CollectorStats stats = live.collector->stats();
    shardscope::fuzz::fail("the collector did not go idle in 9 s: " + std::to_string(stats.connections_open) +
                           " connections open, " + std::to_string(stats.records_received) + " records received, " +
                           std::to_string(stats.records_committed) + " committed, " +
                           std::to_string(stats.write_failures) + " failed transactions");
  }
  static int inputs = 0;
  if (++inputs % 500 == 0) check_store_integrity(live.db_path);
  return 0;
}
