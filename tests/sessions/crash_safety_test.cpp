// Crash safety: a writer killed with SIGKILL in the middle of ingestion leaves a file that opens,
// passes SQLite's integrity check and holds every committed batch whole (and nothing half-written).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "sessions/collector.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using Clock = std::chrono::steady_clock;

// Child: a collector and one rank streaming steps (timers first, then the step) until killed.
[[noreturn]] void run_collector_child(const std::string& path) {
  try {
    CollectorOptions options;
    options.db_path = path;
    options.session_uid = "crash";
    options.secret = "crash-test-secret-0123456789abcdef";
    options.log = [](CollectorLogLevel, const std::string&) {};
    Collector collector(options);
    collector.start();
    TcpSinkOptions o;
    o.port = collector.port();
    o.secret = rank_key(options.secret, -1);
    o.rank = -1;
    TcpEventSink launcher(o);
    launcher.send(testing::sample_run_start("crash-run", 1, "{}"));
    launcher.close();
    o.rank = 0;
    o.secret = rank_key(options.secret, 0);
    TcpEventSink sink(o);
    for (std::int64_t step = 0;; ++step) {
      sink.send(TimerBreakdown{0, step, {{"forward", 1}, {"backward", 2}}});
      StepMetrics m;
      m.step = step;
      m.loss = static_cast<double>(step);
      m.step_time_ms = 1;
      sink.send(m);
    }
  } catch (...) {
  }
  _exit(3);
}

// Child: explicit transactions of 500 steps; batch b holds steps [500b, 500b + 500) with loss b.
[[noreturn]] void run_writer_child(const std::string& path) {
  try {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    for (std::int64_t batch = 0;; ++batch) {
      std::vector<Event> events;
      for (std::int64_t k = 0; k < 500; ++k) {
        StepMetrics m;
        m.step = batch * 500 + k;
        m.loss = static_cast<double>(batch);
        events.push_back(m);
      }
      writer.write("batches", events);
    }
  } catch (...) {
  }
  _exit(3);
}

// Reads while the child writes (the GUI's situation); returns once `min_steps` are visible.
std::int64_t read_until(const std::string& path, std::int64_t min_steps, pid_t child) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  std::int64_t seen = 0;
  std::unique_ptr<Store> store;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      ADD_FAILURE() << "the writer exited early with status " << status;
      return seen;
    }
    if (!store) {
      try {
        store = std::make_unique<Store>(Store::open(path));
      } catch (const StoreError&) {
        // The child has not committed the schema yet.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
    }
    const auto sessions = list_sessions(*store);  // must never fail while the writer commits
    if (!sessions.empty()) {
      const auto curve = load_curve(*store, sessions[0].id, Metric::kLoss);
      EXPECT_GE(static_cast<std::int64_t>(curve.size()), seen) << "a committed step disappeared";
      seen = static_cast<std::int64_t>(curve.size());
      if (seen >= min_steps) return seen;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "only " << seen << " steps appeared within 30 s";
  return seen;
}

void kill_child(pid_t child) {
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
}

Store open_verified(const std::string& path) {
  StoreOpenOptions options;
  options.integrity = IntegrityCheck::kRefuse;
  return Store::open(path, options);
}

TEST(CrashSafety, CollectorKilledMidIngestionLeavesEveryCommittedStepWhole) {
  const auto path = testing::temp_path("crash_collector");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) run_collector_child(path);
  const auto seen = read_until(path, 3000, child);
  kill_child(child);

  Store store = open_verified(path);
  const auto id = find_session(store, "crash-run");
  const auto steps = load_steps(store, id);
  ASSERT_GE(static_cast<std::int64_t>(steps.size()), seen);
  // The committed steps are a prefix of what the rank sent, each with the value it was sent with,
  // and each step's timers (sent before it) are there too.
  for (std::size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i].step, static_cast<std::int64_t>(i));
    ASSERT_EQ(steps[i].loss, static_cast<double>(i));
  }
  const auto forward = load_timer_curve(store, id, "forward");
  EXPECT_GE(forward.size(), steps.size());
  EXPECT_LE(forward.size(), steps.size() + 1);
  testing::remove_store(path);
}

TEST(CrashSafety, WriterKilledMidTransactionKeepsWholeBatchesOnly) {
  const auto path = testing::temp_path("crash_writer");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) run_writer_child(path);
  read_until(path, 20 * 500, child);
  kill_child(child);

  Store store = open_verified(path);
  Statement s(store.db(), "SELECT CAST(loss AS INTEGER), COUNT(*), MIN(step), MAX(step) FROM steps GROUP BY 1 ORDER BY 1");
  std::int64_t expected_batch = 0;
  while (s.step()) {
    const auto batch = s.int64(0);
    EXPECT_EQ(batch, expected_batch++) << "batches must be contiguous";
    EXPECT_EQ(s.int64(1), 500) << "batch " << batch << " is partial";
    EXPECT_EQ(s.int64(2), batch * 500);
    EXPECT_EQ(s.int64(3), batch * 500 + 499);
  }
  EXPECT_GE(expected_batch, 20);
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
