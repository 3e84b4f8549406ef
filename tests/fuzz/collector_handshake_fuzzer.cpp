// libFuzzer target: a connection's bytes from its very first one, as anyone on the machine can send
// them to a run's collector before proving anything (issue 31). The input is sent raw on a fresh
// connection to one live collector (world size 4), in one piece or, when its first byte is odd, a
// byte at a time as a slow loris would. Must hold: the collector closes every such connection
// (nobody can forge a rank's proof), it goes idle within 9 s, and nothing reaches the store: no
// session row ever appears; every 500 inputs PRAGMA integrity_check passes.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "sessions/collector.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/tcp_connect.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace shardscope::sessions;

struct LiveCollector {
  std::string db_path;
  std::unique_ptr<Collector> collector;
};

LiveCollector& live_collector() {
  static LiveCollector live = [] {
    char folder[] = "/tmp/shardscope-fuzz-handshake-XXXXXX";
    if (!::mkdtemp(folder)) shardscope::fuzz::fail("mkdtemp");
    LiveCollector l;
    l.db_path = std::string(folder) + "/collector.db";
    CollectorOptions options;
    options.db_path = l.db_path;
    options.session_uid = "fuzz-handshake-session";
    options.secret = "fuzz-handshake-secret-0123456789abcdef";
    options.world_size = 4;
    options.handshake_timeout_ms = 2000;
    options.drain_idle_ms = 50;
    options.log = [](CollectorLogLevel, const std::string& text) {
      if (std::getenv("SHARDSCOPE_FUZZ_LOG")) std::fprintf(stderr, "collector: %s\n", text.c_str());
    };
    l.collector = std::make_unique<Collector>(options);
    l.collector->start();
    return l;
  }();
  return live;
}

bool send_some(int fd, const std::uint8_t* data, std::size_t size) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // closed by the collector: what it should do
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Waits for the collector to close `fd` (reading and dropping its challenge); false after `ms`.
bool closed_by_collector(int fd, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buffer[512];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
  return false;
}

void check_store(const std::string& path) {
  SqliteDb db(path, false, true);
  const std::string result = db.query_text("PRAGMA integrity_check");
  if (result != "ok") shardscope::fuzz::fail("the collector's store failed integrity_check: " + result);
  // The collector registers its session (no name, no start) when it starts; only a proven
  // launcher's RunStart fills it in, and only proven ranks add rows.
  if (db.query_int("SELECT count(*) FROM sessions WHERE started_at IS NOT NULL OR name != ''") != 0)
    shardscope::fuzz::fail("an unproven connection started a session");
  for (const char* table : {"steps", "logs", "ranks", "comms"})
    if (db.query_int(std::string("SELECT count(*) FROM ") + table) != 0)
      shardscope::fuzz::fail(std::string("an unproven connection wrote into ") + table);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  LiveCollector& live = live_collector();
  int fd = -1;
  try {
    fd = connect_tcp("127.0.0.1", live.collector->port(), 5000);
  } catch (const std::exception& e) {
    shardscope::fuzz::fail(std::string("cannot connect to the collector: ") + e.what());
  }
  const bool slow = size > 0 && (data[0] & 1);
  const std::size_t trickled = slow ? std::min<std::size_t>(size, 16) : 0;  // a loris's first bytes
  bool open = true;
  for (std::size_t i = 0; i < trickled && open; ++i) open = send_some(fd, data + i, 1);
  if (open) send_some(fd, data + trickled, size - trickled);
  ::shutdown(fd, SHUT_WR);  // a peer that stops: silence must end in a close too
  if (!closed_by_collector(fd, 9000)) shardscope::fuzz::fail("the collector kept an unproven connection open for 9 s");
  ::close(fd);
  const CollectorStats stats = live.collector->stats();
  if (stats.records_received != 0) shardscope::fuzz::fail("an unproven connection's bytes were taken as records");
  static int inputs = 0;
  if (++inputs % 500 == 0) check_store(live.db_path);
  return 0;
}
