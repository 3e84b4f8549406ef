#include "sessions/collector.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/process_helpers.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

struct CapturedLog {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(CollectorLogLevel, const std::string&)> sink() {
    return [this](CollectorLogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
  bool contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
};

int raw_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

int rank_of(const Event& event) {
  return std::visit(
      [](const auto& e) -> int {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunStart> || std::is_same_v<T, RunEnd> || std::is_same_v<T, SessionOrigin>)
          return -1;
        else return e.rank;
      },
      event);
}

void send_all(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

TEST(Collector, IngestsEveryRankAndSurvivesGarbageAndDisconnects) {
  const auto path = testing::temp_path("collector");
  CapturedLog log;
  CollectorOptions options;
  options.db_path = path;
  options.log = log.sink();
  Collector collector(options);
  collector.start();
  ASSERT_GT(collector.port(), 0);

  constexpr int kRanks = 4, kSteps = 50;
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      TcpSinkOptions sink_options;
      sink_options.port = collector.port();
      sink_options.session_uid = "run-1";
      sink_options.rank = r;
      TcpEventSink sink(sink_options);
      if (r == 0) sink.send(testing::sample_run_start("collected", kRanks, "{}"));
      for (const auto& e : testing::sample_steps(kRanks, kSteps))
        if (rank_of(e) == r) sink.send(e);
      sink.close();
    });
  // Garbage: an HTTP request on the collector's port, and a rank that dies mid-frame.
  const int junk = raw_connect(collector.port());
  send_all(junk, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const int partial = raw_connect(collector.port());
  std::string bytes;
  encode_hello({kProtocolVersion, "run-1", 9, "node-z", 1}, bytes);
  encode_event(LogLine{9, 1, LogLevel::kError, "kept: sent before the cut"}, bytes);
  std::string frame;
  encode_event(LogLine{9, 2, LogLevel::kError, "lost: cut in half"}, frame);
  bytes += frame.substr(0, frame.size() / 2);
  send_all(partial, bytes);
  ::close(partial);
  for (auto& t : ranks) t.join();
  ::close(junk);
  collector.stop();

  const auto stats = collector.stats();
  EXPECT_EQ(stats.connections_accepted, kRanks + 2u);
  EXPECT_EQ(stats.connections_rejected, 2u);
  EXPECT_EQ(stats.records_committed, stats.records_received);
  EXPECT_TRUE(log.contains("sent garbage")) << "log should name the garbage";
  EXPECT_TRUE(log.contains("rank 9"));
  EXPECT_TRUE(log.contains("incomplete frame"));

  Store store = Store::open(path);
  const auto id = find_session(store, "collected");
  EXPECT_EQ(load_steps(store, id).size(), static_cast<std::size_t>(kRanks * kSteps));
  const auto logs = load_logs(store, id);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].text, "kept: sent before the cut");
  testing::remove_store(path);
}

TEST(Collector, BackPressureKeepsMemoryBoundedAndLosesNothing) {
  const auto path = testing::temp_path("flood");
  CollectorOptions options;
  options.db_path = path;
  options.max_queue_bytes = 256u << 10;  // tiny, so the flood must be throttled
  options.log = [](CollectorLogLevel, const std::string&) {};
  Collector collector(options);
  collector.start();
  constexpr int kBatches = 100, kPerBatch = 1000;
  std::thread rank([&] {
    TcpSinkOptions o;
    o.port = collector.port();
    o.session_uid = "flood";
    TcpEventSink sink(o);
    for (int b = 0; b < kBatches; ++b) {
      ActivityBatch batch{0, {}};
      for (int k = 0; k < kPerBatch; ++k)
        batch.records.push_back({ActivityKind::kKernel, "void flood_kernel<" + std::to_string(k % 50) + ">()",
                                 b * 1000000LL + k * 100, b * 1000000LL + k * 100 + 50, 0, 7, 0, b});
      sink.send(batch);
    }
    sink.close();
  });
  rank.join();
  collector.stop();
  const auto stats = collector.stats();
  EXPECT_EQ(stats.records_committed, static_cast<std::uint64_t>(kBatches * kPerBatch));
  EXPECT_GT(stats.backpressure_pauses, 0u);
  // Bound: the limit plus at most one read turn (1 MiB) and its per-record overhead.
  EXPECT_LT(stats.queue_bytes_peak, options.max_queue_bytes + (1u << 20) + 96u * 30000);
  Store store = Store::open(path);
  EXPECT_EQ(load_activities(store, find_session(store, "flood"), 0).size(),
            static_cast<std::size_t>(kBatches * kPerBatch));
  testing::remove_store(path);
}

TEST(TcpEventSink, UnreachableCollectorFailsFastNamingTheAddress) {
  const int port = test::free_port();
  TcpSinkOptions o;
  o.port = port;
  o.session_uid = "x";
  const auto start = std::chrono::steady_clock::now();
  try {
    TcpEventSink sink(o);
    FAIL() << "connected to a closed port";
  } catch (const CollectorUnreachableError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << message;
    EXPECT_NE(message.find("refused"), std::string::npos) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_THROW(parse_host_port("localhost"), SessionsError);
  EXPECT_EQ(parse_host_port("[::1]:29600"), (std::pair<std::string, int>{"::1", 29600}));
}

TEST(FileEventSink, WritesARunWithoutALauncher) {
  const auto path = testing::temp_path("filesink");
  {
    FileEventSink sink({path, "solo", 4096});
    sink.send(testing::sample_run_start("solo-run", 1, "{}"));
    for (const auto& e : testing::sample_steps(1, 5)) sink.send(e);
    sink.send(RunEnd{"completed", 1, 2, {{0, 0}}});
    sink.close();
  }
  Store store = Store::open(path);
  const auto id = find_session(store, "solo-run");
  EXPECT_EQ(load_steps(store, id).size(), 5u);
  EXPECT_EQ(load_session(store, id).info.status, "completed");
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
