// shardscope-load: N ranks of a recorded or synthetic run played through the real collector
// (handshake with per-rank keys from the run's secret, wire framing, back-pressure, the store), at
// a pace or flat out. The collector benchmark's successor (docs/benchmarks.md, "shardscope-load").
//
// Prints fixed columns like nccl-tests and an OK/FAILED footer with the received and committed
// counts; exits 1 when anything sent was not committed, the queue went above its cap, or a flat-out
// run fell below --min-rate; 2 for bad flags or an unreadable session file.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/load/load_queries.hpp"
#include "configs/number_text.hpp"
#include "sessions/build_info.hpp"
#include "sessions/collector.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/load_generator.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace {

using namespace shardscope::sessions;
using Clock = std::chrono::steady_clock;

struct Options {
  LoadOptions load;
  SyntheticRunOptions synthetic;
  std::optional<std::int64_t> window_step;  ///< 1-based as given; default the middle step
  std::string session_file, session_selector;
  RecordedRunOptions recorded;
  std::size_t queue_mb = 64;
  std::string db = "/tmp/shardscope_load.db";
  double min_rate = 100000;
  std::int64_t query_steps = 0;
  bool json = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr const char* kUsage = R"(usage: shardscope-load [options]

Plays N ranks of a run through a real collector: each rank connects over loopback TCP, proves
itself with its own key derived from the run's secret, and streams its steps (collective marks,
log lines, step metrics, timers, collective records, and a profiled window of CUPTI activity and
NVTX ranges) in the wire framing; the collector commits them to --db. The events come from a
recorded session (--session) or a synthetic run of the same shape.

run:
  --ranks N           ranks to play (64)
  --steps N           steps each rank plays (200); a recording shorter than that starts again
  --step-ms MS        pace: every rank starts a step each MS ms; 0 (the default) is flat out
  --recorded-pace     pace: each step lasts what it did when recorded (synthetic: 250 ms)
  --speed X           with --recorded-pace: play X times faster (1)
  --threads N         sender threads multiplexing the ranks' sockets (1)
synthetic run (without --session):
  --kernels N         activity records in the profiled window of each profiled rank (100000; 0: none)
  --window-step N     the step whose end ships the window (default: the middle step)
  --profiled-ranks N  ranks 0..N-1 ship a window (1)
recorded run:
  --session FILE      replay a session of this session file
  --session-id SEL    which one: id, uid (prefix) or name (default: the newest)
  --source-ranks N    recorded ranks read (8); rank r replays recorded rank r % N
collector:
  --db PATH           the session file it writes (/tmp/shardscope_load.db; replaced)
  --queue-mb N        its memory cap, max_queue_bytes, MiB (64)
report:
  --min-rate R        a flat-out run below R committed records/s is FAILED (100000; 0: never)
  --query-steps N     then time the reader on a fresh N steps x 8 ranks session (0: skip)
  --json              one JSON object instead of the table
  --help
)";

long long integer_flag(const std::string& flag, const std::string& text, long long min) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty())
    throw UsageError(flag + " expects an integer, got '" + text + "'");
  if (value < min) throw UsageError(flag + " must be at least " + std::to_string(min) + ", got " + text);
  return value;
}

double number_flag(const std::string& flag, const std::string& text) {
  const shardscope::configs::LeadingNumber n = shardscope::configs::leading_number(text);
  if (!n.whole(text) || n.value < 0) throw UsageError(flag + " expects a number >= 0, got '" + text + "'");
  return n.value;
}

// One flag with a value; false when `a` is not one of them.
bool parse_valued(Options& o, const std::string& a, const std::string& v) {
  if (a == "--ranks") o.load.ranks = static_cast<int>(integer_flag(a, v, 1));
  else if (a == "--steps") o.load.steps = integer_flag(a, v, 1);
  else if (a == "--step-ms") o.load.step_ms = number_flag(a, v);
  else if (a == "--speed") o.load.speed = number_flag(a, v);
  else if (a == "--threads") o.load.threads = static_cast<int>(integer_flag(a, v, 1));
  else if (a == "--kernels") o.synthetic.kernels = static_cast<int>(integer_flag(a, v, 0));
  else if (a == "--window-step") o.window_step = integer_flag(a, v, 1);
  else if (a == "--profiled-ranks") o.synthetic.profiled_ranks = static_cast<int>(integer_flag(a, v, 0));
  else if (a == "--session") o.session_file = v;
  else if (a == "--session-id") o.session_selector = v;
  else if (a == "--source-ranks") o.recorded.source_ranks = static_cast<int>(integer_flag(a, v, 1));
  else if (a == "--db") o.db = v;
  else if (a == "--queue-mb") o.queue_mb = static_cast<std::size_t>(integer_flag(a, v, 1));
  else if (a == "--min-rate") o.min_rate = number_flag(a, v);
  else if (a == "--query-steps") o.query_steps = integer_flag(a, v, 0);
  else return false;
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (a != "--json" && a != "--recorded-pace" && a != "--help" && a != "-h") {
      if (i + 1 >= argc) throw UsageError(a + " needs a value (shardscope-load --help lists the flags)");
      v = argv[++i];
    }
    if (a == "--json") o.json = true;
    else if (a == "--recorded-pace") o.load.recorded_pace = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (!parse_valued(o, a, v))
      throw UsageError("unknown flag '" + a + "' (shardscope-load --help lists the flags)");
  }
  if (o.load.speed <= 0) throw UsageError("--speed must be above 0");
  if (!o.session_selector.empty() && o.session_file.empty())
    throw UsageError("--session-id picks a session of --session FILE; give the file too");
  if (!o.session_file.empty() && o.session_file == o.db)
    throw UsageError("--session and --db are the same file; the collector replaces --db, so give it another path");
  o.synthetic.window_step = o.window_step ? *o.window_step - 1 : o.load.steps / 2;
  return o;
}

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

std::unique_ptr<LoadScript> make_script(const Options& o) {
  if (o.session_file.empty()) return make_synthetic_script(o.synthetic);
  StoreOpenOptions read;
  read.read_only = true;
  std::optional<Store> opened;
  try {
    opened.emplace(Store::open(o.session_file, read));
  } catch (const std::exception& e) {
    throw UsageError("--session " + o.session_file + " cannot be replayed: " + e.what());
  }
  Store& store = *opened;
  const auto listed = list_sessions(store);
  if (listed.empty()) throw UsageError("--session " + o.session_file + " holds no sessions to replay");
  const std::int64_t id = o.session_selector.empty() ? listed.front().id : find_session(store, o.session_selector);
  return read_recorded_script(store, id, o.recorded);
}

// The process's peak resident memory (collector, ranks and SQLite's cache together), MB.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

struct Measured {
  LoadResult load;
  CollectorStats stats;
  double ingest_s = 0;  ///< first step sent .. everything the ranks sent committed
  double stop_s = 0;    ///< stop(): drain, last commit, WAL checkpoint
  std::string load_before, load_after;
};

Measured measure(const Options& o, const LoadScript& script) {
  remove_db(o.db);
  CollectorOptions options;
  options.db_path = o.db;
  options.session_uid = new_session_uid();
  options.secret = new_run_secret();
  options.world_size = o.load.ranks;
  options.max_queue_bytes = o.queue_mb << 20;
  options.log = [](CollectorLogLevel level, const std::string& message) {
    if (level != CollectorLogLevel::kInfo) std::fprintf(stderr, "shardscope collector: %s\n", message.c_str());
  };
  Collector collector(options);
  collector.start();
  Measured m;
  m.load_before = load_average();
  LoadOptions load = o.load;
  load.port = collector.port();
  load.secret = options.secret;
  m.load = run_load(script, load);
  const auto sent = Clock::now();
  // Everything the ranks and the launcher sent, committed (stop() then only checkpoints); a
  // collector that stops committing for 5 s has lost something, which the footer reports.
  auto progress_at = sent;
  for (std::uint64_t last = 0; collector.stats().records_committed < m.load.records_sent;) {
    collector.wait_until_committed(50);
    const auto now_committed = collector.stats().records_committed;
    if (now_committed != last) progress_at = Clock::now();
    last = now_committed;
    if (Clock::now() - progress_at > std::chrono::seconds(5)) break;
  }
  m.ingest_s = m.load.send_s + std::chrono::duration<double>(Clock::now() - sent).count();
  const auto stop = Clock::now();
  collector.stop();
  m.stop_s = std::chrono::duration<double>(Clock::now() - stop).count();
  m.stats = collector.stats();
  m.load_after = load_average();
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::unique_ptr<LoadScript> script;
  try {
    o = parse(argc, argv);
    script = make_script(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope-load: %s\n", e.what());
    return 2;
  }
  Measured m;
  try {
    m = measure(o, *script);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope-load: %s\n", e.what());
    std::printf("# FAILED: %s\n", e.what());
    return 1;
  }
  const shardscope::app::QueryPhase queries = o.query_steps > 0 ? shardscope::app::time_queries(o.db + ".query", o.query_steps) : shardscope::app::QueryPhase{};
  const auto host = probe_host();
  const auto& build = build_info();
  const auto& s = m.stats;
  const double rate = static_cast<double>(s.records_committed) / m.ingest_s;
  const std::size_t cap = o.queue_mb << 20;
  const bool paced = o.load.step_ms > 0 || o.load.recorded_pace;
  const bool complete = s.records_committed == s.records_received && s.records_committed == m.load.records_sent;
  const bool bounded = s.queue_bytes_peak <= cap;
  const bool fast = paced || o.min_rate <= 0 || rate >= o.min_rate;
  const bool ok = complete && bounded && fast;
  const double rss = peak_rss_mb();
  if (o.json) {
    std::printf("{\"commit\": \"%s\", \"cpu\": \"%s\", \"cores\": %d, \"load_average_before\": \"%s\", "
                "\"load_average_after\": \"%s\", \"ranks\": %d, \"steps\": %lld, \"step_ms\": %g, \"threads\": %d, "
                "\"records_sent\": %llu, \"records_received\": %llu, \"records_committed\": %llu, \"ingest_s\": %.3f, "
                "\"stop_s\": %.3f, \"connect_s\": %.3f, \"records_per_s\": %.0f, \"transactions\": %llu, "
                "\"queue_peak_bytes\": %zu, \"queue_cap_bytes\": %zu, \"rss_peak_mb\": %.1f, "
                "\"backpressure_pauses\": %llu, \"max_rank_blocked_s\": %.3f, \"mean_rank_blocked_s\": %.3f, "
                "\"worst_lag_ms\": %.1f, \"query_fill_s\": %.2f, \"queries_ms\": {",
                build.git_hash.c_str(), host.cpu_model.c_str(), host.logical_cores, m.load_before.c_str(),
                m.load_after.c_str(), o.load.ranks, static_cast<long long>(o.load.steps), o.load.step_ms, o.load.threads,
                static_cast<unsigned long long>(m.load.records_sent), static_cast<unsigned long long>(s.records_received),
                static_cast<unsigned long long>(s.records_committed), m.ingest_s, m.stop_s, m.load.connect_s, rate,
                static_cast<unsigned long long>(s.transactions), s.queue_bytes_peak, cap, rss,
                static_cast<unsigned long long>(s.backpressure_pauses), m.load.max_blocked_s, m.load.mean_blocked_s,
                m.load.worst_lag_ms, queries.fill_s);
    for (std::size_t i = 0; i < queries.queries.size(); ++i)
      std::printf("%s\"%s\": %.1f", i ? ", " : "", queries.queries[i].name.c_str(), queries.queries[i].ms);
    std::printf("}, \"ok\": %s}\n", ok ? "true" : "false");
    return ok ? 0 : 1;
  }
  std::printf("# shardscope-load  commit %s  cpu %s (%d logical cores)  load average %s -> %s\n",
              build.git_hash.c_str(), host.cpu_model.c_str(), host.logical_cores, m.load_before.c_str(),
              m.load_after.c_str());
  std::printf("# %s\n", script->describe().c_str());
  std::printf("# %6s %6s %7s %10s %9s %11s %6s %9s %7s %8s %10s %10s %8s\n", "ranks", "steps", "step_ms", "records",
              "time(s)", "records/s", "txns", "queue(MB)", "cap(MB)", "rss(MB)", "blocked(s)", "connect(s)", "lag(ms)");
  std::printf("  %6d %6lld %7g %10llu %9.3f %11.0f %6llu %9.1f %7zu %8.1f %10.3f %10.3f %8.1f\n", o.load.ranks,
              static_cast<long long>(o.load.steps), o.load.step_ms, static_cast<unsigned long long>(s.records_committed),
              m.ingest_s, rate, static_cast<unsigned long long>(s.transactions), s.queue_bytes_peak / 1048576.0,
              o.queue_mb, rss, m.load.max_blocked_s, m.load.connect_s, m.load.worst_lag_ms);
  if (!queries.queries.empty()) {
    std::printf("# queries on %lld steps x 8 ranks (written in %.2f s)\n", static_cast<long long>(o.query_steps), queries.fill_s);
    for (const auto& q : queries.queries) std::printf("  %-32s %10.1f ms\n", q.name.c_str(), q.ms);
  }
  std::ostringstream why;
  if (!complete) why << ", " << m.load.records_sent << " sent";
  if (!bounded) why << ", queue above its cap";
  const std::string threshold = paced ? "paced: no rate threshold"
                                      : o.min_rate <= 0 ? "no threshold" : "threshold " + std::to_string(static_cast<long long>(o.min_rate));
  std::printf("# %s: %.0f records/s (%s), %llu received, %llu committed%s\n", ok ? "OK" : "FAILED", rate,
              threshold.c_str(), static_cast<unsigned long long>(s.records_received),
              static_cast<unsigned long long>(s.records_committed), why.str().c_str());
  return ok ? 0 : 1;
}
