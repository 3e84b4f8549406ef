#include "app/load/load_queries.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::app {
namespace {

using namespace shardscope::sessions;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void remove_store(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

StepMetrics query_step(int rank, std::int64_t step) {
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1795900000 + static_cast<double>(step);
  m.step_time_ms = 250 + static_cast<double>(step % 7);
  m.loss = 8.0 / (1.0 + static_cast<double>(step) * 0.01);
  m.lr = 3e-4;
  m.grad_norm = 1.1;
  m.tokens_per_s = 16 * 2048;
  m.mem_allocated_bytes = 40ll << 30;
  return m;
}

}  // namespace

QueryPhase time_queries(const std::string& path, std::int64_t steps) {
  remove_store(path);
  QueryPhase phase;
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    const auto t0 = Clock::now();
    for (std::int64_t first = 0; first < steps; first += 2000) {
      std::vector<Event> batch;
      for (std::int64_t step = first; step < std::min(steps, first + 2000); ++step)
        for (int rank = 0; rank < 8; ++rank) {
          batch.push_back(TimerBreakdown{rank, step, {{"forward", 80}, {"backward", 160}}});
          batch.push_back(query_step(rank, step));
        }
      writer.write("query", batch);
    }
    store.checkpoint();
    phase.fill_s = seconds_since(t0);
    const auto id = find_session(store, "query");
    auto timed = [&](const std::string& name, auto&& fn) {
      const auto t = Clock::now();
      fn();
      phase.queries.push_back({name, seconds_since(t) * 1e3});
    };
    timed("list_sessions", [&] { list_sessions(store); });
    timed("load_curve(loss)", [&] { load_curve(store, id, Metric::kLoss); });
    timed("load_curve(step_time, rank 3)", [&] { load_curve(store, id, Metric::kStepTime, 3); });
    timed("load_steps(rank 5)", [&] { load_steps(store, id, 5); });
    timed("summarize_session", [&] { summarize_session(store, id); });
    timed("check_integrity", [&] { store.check_integrity(); });
  }
  remove_store(path);
  return phase;
}

}  // namespace shardscope::app
