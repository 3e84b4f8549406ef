// Ingestion benchmark of the collector (docs/benchmarks.md, "Session collector").
//
// Phase 1 (ingest): R simulated ranks connect over loopback TCP and report every step as fast as
// they can (timers, collectives, step metrics); rank 0 also sends a profiled window of K kernel
// records and NVTX ranges. Measured: records/s from the first connection until everything is
// committed, and how long ranks spent blocked in send() (the cost of reporting to a rank).
// Phase 2 (query): a session of S steps x 8 ranks is written directly, then the reader's queries
// are timed on it (summary, curves, per-rank rows, integrity check).
//
// Prints fixed columns like nccl-tests, an OK/FAILED footer, and exits 1 below --min-rate.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "sessions/build_info.hpp"
#include "sessions/collector.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace {

using namespace shardscope::sessions;
using Clock = std::chrono::steady_clock;

struct Options {
  int ranks = 64;
  int steps = 200;
  int kernels = 100000;
  int query_steps = 100000;
  int step_ms = 0;           ///< >0: ranks "compute" this long per step (paced); 0: flood
  double min_rate = 100000;  ///< records/s below which the run FAILS
  std::string db = "/tmp/shardscope_collector_bench.db";
  bool json = false;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

StepMetrics step_metrics(int rank, std::int64_t step) {
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1795900000 + static_cast<double>(step);
  m.step_time_ms = 250 + (step % 7);
  m.loss = 8.0 / (1.0 + static_cast<double>(step) * 0.01);
  m.lr = 3e-4;
  m.loss_scale = 65536;
  m.grad_norm = 1.1;
  m.samples_per_s = 16;
  m.tokens_per_s = 16 * 2048;
  m.tflops = 310;
  m.mem_allocated_bytes = 40ll << 30;
  m.mem_reserved_bytes = 48ll << 30;
  m.mem_peak_bytes = 44ll << 30;
  return m;
}

void send_window(EventSink& sink, int kernels) {
  for (int first = 0; first < kernels; first += 1000) {
    ActivityBatch batch{0, {}};
    for (int k = first; k < std::min(kernels, first + 1000); ++k)
      batch.records.push_back({k % 10 == 0 ? ActivityKind::kMemcpy : ActivityKind::kKernel,
                               k % 10 == 0 ? "HtoD" : "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn_" + std::to_string(k % 40),
                               k * 2000LL, k * 2000LL + 1500, 0, 7 + k % 3, k % 10 == 0 ? 1 << 20 : 0, 100});
    sink.send(batch);
  }
  NvtxBatch nvtx{0, {}};
  for (int k = 0; k < kernels / 50; ++k) nvtx.ranges.push_back({"layer_" + std::to_string(k % 48), "shardscope", k * 100000LL, k * 100000LL + 90000, -1, 1, 100});
  sink.send(nvtx);
}

struct RankResult {
  double blocked_s = 0;       ///< total time inside send()/close()
  double worst_step_ms = 0;   ///< the slowest single step's reporting
  double worst_plain_step_ms = 0;  ///< the same, leaving out the step that sends the window
};

constexpr const char* kBenchSecret = "collector-bench-secret-0123456789abcdef";

// The launcher's part (rank -1): only a launcher may start a run.
void send_run_start(int port, const Options& o) {
  TcpSinkOptions sink_options;
  sink_options.port = port;
  sink_options.secret = rank_key(kBenchSecret, -1);
  sink_options.rank = -1;
  TcpEventSink sink(sink_options);
  RunStart start;
  start.name = "collector-bench";
  start.started_at = static_cast<double>(std::time(nullptr));
  start.world_size = o.ranks;
  start.environment.host = probe_host();
  for (int r = 0; r < o.ranks; ++r) start.ranks.push_back({r, r % 8, "sim-node-" + std::to_string(r / 8), r, "cuda:" + std::to_string(r % 8)});
  sink.send(start);
  sink.close();
}

RankResult run_rank(int rank, int port, const Options& o) {
  TcpSinkOptions sink_options;
  sink_options.port = port;
  sink_options.secret = rank_key(kBenchSecret, rank);
  sink_options.rank = rank;
  TcpEventSink sink(sink_options);
  RankResult result;
  const char* timers[] = {"forward", "backward", "allreduce", "step", "data"};
  for (std::int64_t step = 0; step < o.steps; ++step) {
    const auto t0 = Clock::now();
    TimerBreakdown breakdown{rank, step, {}};
    for (const char* t : timers) breakdown.timers.push_back({t, 10.0 + rank % 3});
    sink.send(breakdown);
    for (const char* op : {"reduce_scatter", "all_gather", "all_reduce"})
      sink.send(CommRecord{rank, step, op, 256 << 20, 5000, 53.7, 94.0, o.ranks});
    if (rank == 0 && step == o.steps / 2) send_window(sink, o.kernels);
    sink.send(step_metrics(rank, step));
    const double dt = seconds_since(t0);
    result.blocked_s += dt;
    result.worst_step_ms = std::max(result.worst_step_ms, dt * 1e3);
    if (!(rank == 0 && step == o.steps / 2)) result.worst_plain_step_ms = std::max(result.worst_plain_step_ms, dt * 1e3);
    if (o.step_ms > 0) std::this_thread::sleep_until(t0 + std::chrono::milliseconds(o.step_ms));
  }
  const auto t0 = Clock::now();
  sink.close();
  result.blocked_s += seconds_since(t0);
  return result;
}

struct IngestResult {
  double seconds = 0;
  CollectorStats stats;
  double max_blocked_s = 0;
  double worst_step_ms = 0;
  double worst_plain_step_ms = 0;
};

IngestResult ingest(const Options& o) {
  remove_db(o.db);
  CollectorOptions options;
  options.db_path = o.db;
  options.session_uid = "bench";
  options.secret = kBenchSecret;
  options.world_size = o.ranks;
  options.log = [](CollectorLogLevel level, const std::string& message) {
    if (level != CollectorLogLevel::kInfo) std::fprintf(stderr, "shardscope collector: %s\n", message.c_str());
  };
  Collector collector(options);
  collector.start();
  const auto start = Clock::now();
  send_run_start(collector.port(), o);
  std::vector<RankResult> results(static_cast<std::size_t>(o.ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r)
    threads.emplace_back([&, r] { results[static_cast<std::size_t>(r)] = run_rank(r, collector.port(), o); });
  for (auto& t : threads) t.join();
  collector.stop();
  IngestResult out;
  out.seconds = seconds_since(start);
  out.stats = collector.stats();
  for (const auto& r : results) {
    out.max_blocked_s = std::max(out.max_blocked_s, r.blocked_s);
    out.worst_step_ms = std::max(out.worst_step_ms, r.worst_step_ms);
    out.worst_plain_step_ms = std::max(out.worst_plain_step_ms, r.worst_plain_step_ms);
  }
  return out;
}

struct QueryTiming {
  std::string name;
  double ms;
};

std::vector<QueryTiming> query(const Options& o, double& fill_s) {
  const std::string path = o.db + ".query";
  remove_db(path);
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  const auto t0 = Clock::now();
  for (std::int64_t first = 0; first < o.query_steps; first += 2000) {
    std::vector<Event> batch;
    for (std::int64_t step = first; step < std::min<std::int64_t>(o.query_steps, first + 2000); ++step)
      for (int rank = 0; rank < 8; ++rank) {
        batch.push_back(TimerBreakdown{rank, step, {{"forward", 80}, {"backward", 160}}});
        batch.push_back(step_metrics(rank, step));
      }
    writer.write("query", batch);
  }
  store.checkpoint();
  fill_s = seconds_since(t0);
  const auto id = find_session(store, "query");
  std::vector<QueryTiming> out;
  auto timed = [&](const std::string& name, auto&& fn) {
    const auto t = Clock::now();
    fn();
    out.push_back({name, seconds_since(t) * 1e3});
  };
  timed("list_sessions", [&] { list_sessions(store); });
  timed("load_curve(loss)", [&] { load_curve(store, id, Metric::kLoss); });
  timed("load_curve(step_time, rank 3)", [&] { load_curve(store, id, Metric::kStepTime, 3); });
  timed("load_steps(rank 5)", [&] { load_steps(store, id, 5); });
  timed("summarize_session", [&] { summarize_session(store, id); });
  timed("check_integrity", [&] { store.check_integrity(); });
  remove_db(path);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "collector_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ranks") o.ranks = std::stoi(next());
    else if (a == "--steps") o.steps = std::stoi(next());
    else if (a == "--kernels") o.kernels = std::stoi(next());
    else if (a == "--query-steps") o.query_steps = std::stoi(next());
    else if (a == "--min-rate") o.min_rate = std::stod(next());
    else if (a == "--step-ms") o.step_ms = std::stoi(next());
    else if (a == "--db") o.db = next();
    else if (a == "--json") o.json = true;
    else {
      std::fprintf(stderr,
                   "usage: collector_bench [--ranks N] [--steps N] [--kernels N] [--query-steps N] "
                   "[--step-ms MS] [--min-rate RECORDS_PER_S] [--db PATH] [--json]\n");
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const auto host = probe_host();
  const auto& build = build_info();
  const IngestResult r = ingest(o);
  const double rate = static_cast<double>(r.stats.records_committed) / r.seconds;
  double fill_s = 0;
  const auto queries = o.query_steps > 0 ? query(o, fill_s) : std::vector<QueryTiming>{};
  // Paced runs measure the cost to the ranks, not capacity: the rate threshold applies to floods.
  const bool ok = (o.step_ms > 0 || rate >= o.min_rate) && r.stats.records_committed == r.stats.records_received;
  if (o.json) {
    std::printf("{\"commit\": \"%s\", \"cpu\": \"%s\", \"cores\": %d, \"ranks\": %d, \"steps\": %d, \"kernels\": %d, "
                "\"records\": %llu, \"seconds\": %.3f, \"records_per_s\": %.0f, \"transactions\": %llu, "
                "\"queue_peak_bytes\": %zu, \"backpressure_pauses\": %llu, \"max_rank_blocked_s\": %.3f, "
                "\"worst_step_report_ms\": %.2f, \"worst_plain_step_report_ms\": %.2f, \"step_ms\": %d, \"query_fill_s\": %.2f, \"queries_ms\": {",
                build.git_hash.c_str(), host.cpu_model.c_str(), host.logical_cores, o.ranks, o.steps, o.kernels,
                static_cast<unsigned long long>(r.stats.records_committed), r.seconds, rate,
                static_cast<unsigned long long>(r.stats.transactions), r.stats.queue_bytes_peak,
                static_cast<unsigned long long>(r.stats.backpressure_pauses), r.max_blocked_s, r.worst_step_ms, r.worst_plain_step_ms, o.step_ms, fill_s);
    for (std::size_t i = 0; i < queries.size(); ++i)
      std::printf("%s\"%s\": %.1f", i ? ", " : "", queries[i].name.c_str(), queries[i].ms);
    std::printf("}, \"ok\": %s}\n", ok ? "true" : "false");
    return ok ? 0 : 1;
  }
  std::printf("# shardscope collector bench  commit %s  cpu %s (%d logical cores)\n", build.git_hash.c_str(),
              host.cpu_model.c_str(), host.logical_cores);
  std::printf("# %6s %6s %7s %8s %10s %9s %12s %7s %10s %11s %10s %10s\n", "ranks", "steps", "step_ms", "kernels",
              "records", "time(s)", "records/s", "txns", "queue(MB)", "blocked(s)", "worst(ms)", "plain(ms)");
  std::printf("  %6d %6d %7d %8d %10llu %9.3f %12.0f %7llu %10.1f %11.3f %10.2f %10.2f\n", o.ranks, o.steps, o.step_ms, o.kernels,
              static_cast<unsigned long long>(r.stats.records_committed), r.seconds, rate,
              static_cast<unsigned long long>(r.stats.transactions), r.stats.queue_bytes_peak / 1048576.0,
              r.max_blocked_s, r.worst_step_ms, r.worst_plain_step_ms);
  if (!queries.empty()) {
    std::printf("# queries on %d steps x 8 ranks (written in %.2f s)\n", o.query_steps, fill_s);
    for (const auto& q : queries) std::printf("  %-32s %10.1f ms\n", q.name.c_str(), q.ms);
  }
  const std::string threshold = o.step_ms > 0 ? "paced: no rate threshold" : "threshold " + std::to_string(static_cast<long long>(o.min_rate));
  std::printf("# %s: %.0f records/s (%s), %llu received, %llu committed\n", ok ? "OK" : "FAILED", rate,
              threshold.c_str(), static_cast<unsigned long long>(r.stats.records_received),
              static_cast<unsigned long long>(r.stats.records_committed));
  return ok ? 0 : 1;
}
