#include "sessions/import/chrome_trace_builder.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>

#include "sessions/import/text_fields.hpp"
#include "sessions/sqlite_db.hpp"

namespace shardscope::sessions {

// The events' texts are compared as string_views: no strlen per compare, at millions of events.
using namespace std::string_view_literals;

// The trace's fwdbwd flow ends (one per forward and one per backward operator: 2 x 147,744 of
// them in a 400 MB trace) in a private scratch database (SQLite's "" file: on disk, deleted when
// closed), so RAM holds only its page cache, whatever the trace's size.
// Kineto links a forward op to the backward op autograd ran for it by a "fwdbwd" flow: "s" at the
// forward op's start, "f" (binding point "e", the enclosing slice) at the backward op's start, on
// their threads. Each end binds to the innermost CPU op of its thread that encloses its time: the
// latest start, then the earliest end, as the emit pass meets the ops; the ends an op encloses are
// a range of the (tid, ts) index, and the walk is bounded so a hostile trace stays linear. The
// links are then read back in the order of the flows' ids.
class FlowEndTable {
 public:
  FlowEndTable()
      : db_("", true, false),
        insert_(prepared(db_), "INSERT INTO ends(id, tid, ts, start) VALUES(?1, ?2, ?3, ?4)"),
        enclosed_(db_, "SELECT rowid, bound, op_start, op_end FROM ends WHERE tid = ?1 AND ts BETWEEN ?2 AND ?3 "
                       "ORDER BY tid, ts LIMIT ?4"),
        bind_(db_, "UPDATE ends SET bound = 1, op_start = ?2, op_end = ?3, op_external_id = ?4 WHERE rowid = ?1") {}

  /// Index pass: one flow end, its time relative to the trace's base time.
  void add(std::int64_t id, std::int64_t tid, std::int64_t relative_ts, bool start) {
    insert_.bind(1, id).bind(2, tid).bind(3, relative_ts).bind(4, start ? 1 : 0).run();
    empty_ = false;
  }
  /// Emit pass: offers the ends of `tid` within [relative_start, relative_end] (at most `walk`) to
  /// the operator; an end keeps the innermost (latest start, then earliest end) offered.
  void bind(std::int64_t tid, std::int64_t relative_start, std::int64_t relative_end, const NvtxRange& op, int walk) {
    if (empty_) return;
    if (!indexed_) db_.exec("CREATE INDEX ends_by_time ON ends(tid, ts)"), indexed_ = true;
    rebind_.clear();
    enclosed_.bind(1, tid).bind(2, relative_start).bind(3, relative_end).bind(4, walk);
    while (enclosed_.step()) {
      const bool bound = enclosed_.int64(1) != 0;
      if (bound && std::make_pair(enclosed_.int64(2), -enclosed_.int64(3)) >= std::make_pair(op.start_ns, -op.end_ns))
        continue;
      rebind_.push_back(enclosed_.int64(0));
    }
    enclosed_.reset();
    for (const std::int64_t row : rebind_) bind_.bind(1, row).bind(2, op.start_ns).bind(3, op.end_ns).bind(4, op.external_id).run();
  }
  /// After the emit pass: each bound backward end with the last bound forward end of its id (by
  /// thread and time) whose operator has an external id, by id, then thread and time.
  std::size_t links(std::size_t batch, const std::function<void(std::vector<ForwardLink>&)>& take) {
    if (empty_) return 0;
    db_.exec("CREATE INDEX ends_by_id ON ends(bound, start, id, tid, ts)");
    Statement select(db_,
                     "SELECT * FROM (SELECT b.tid, b.op_start, b.op_end, b.op_external_id, "
                     "(SELECT f.op_external_id FROM ends f WHERE f.bound = 1 AND f.start = 1 AND f.id = b.id "
                     "ORDER BY f.tid DESC, f.ts DESC LIMIT 1) AS forward FROM ends b WHERE b.bound = 1 AND "
                     "b.start = 0 ORDER BY b.id, b.tid, b.ts) WHERE forward IS NOT NULL");
    std::vector<ForwardLink> out;
    std::size_t count = 0;
    auto hand_over = [&] {
      count += out.size();
      if (take) take(out);
      out.clear();
    };
    while (select.step()) {
      out.push_back({select.int64(0), select.int64(1), select.int64(2), select.optional_int64(3), select.int64(4)});
      if (out.size() >= batch) hand_over();
    }
    if (!out.empty()) hand_over();
    return count;
  }

 private:
  // Nothing here outlives the import: no journal, no syncs, one transaction never committed (its
  // pages spill to the file past the cache), a 4 MiB page cache.
  static SqliteDb& prepared(SqliteDb& db) {
    db.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -4096; "
            "CREATE TABLE ends(id INTEGER, tid INTEGER, ts INTEGER, start INTEGER, bound INTEGER DEFAULT 0, "
            "op_start INTEGER, op_end INTEGER, op_external_id INTEGER); BEGIN");
    return db;
  }
  SqliteDb db_;
  Statement insert_, enclosed_, bind_;
  std::vector<std::int64_t> rebind_;
  bool empty_ = true, indexed_ = false;
};

namespace {

std::optional<Dim3> dim3_of(const std::vector<std::int64_t>& v) {
  if (v.size() != 3) return std::nullopt;
  return Dim3{static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2])};
}

// "Memcpy HtoD (Pageable -> Device)" -> "HtoD", as ShardScope's CUPTI collector names copies.
std::string memcpy_name(const std::string& name) {
  if (starts_with(name, "Memcpy ")) {
    const auto end = name.find(' ', 7);
    return name.substr(7, end == std::string::npos ? std::string::npos : end - 7);
  }
  return name;
}

std::optional<std::int64_t> profiler_step(const std::string& name, std::int64_t offset) {
  if (!starts_with(name, "ProfilerStep#")) return std::nullopt;
  const auto n = parse_integer(std::string_view(name).substr(13));
  std::int64_t step = 0;
  if (!n || __builtin_add_overflow(*n, offset, &step)) return std::nullopt;
  return step;
}

// `us` microseconds after `base_ns`, in ns; nullopt where that leaves int64 (a corrupt trace: its
// event is skipped rather than wrapped around).
std::optional<std::int64_t> ns_after(std::int64_t base_ns, double us) {
  const double ns = us * 1000.0;
  if (!std::isfinite(ns) || std::abs(ns) > 9.0e18) return std::nullopt;
  std::int64_t sum = 0;
  if (__builtin_add_overflow(base_ns, static_cast<std::int64_t>(std::llround(ns)), &sum)) return std::nullopt;
  return sum;
}

// Adds `base` to both ends; false (the record is dropped) where that leaves int64.
bool shifted(std::int64_t base, std::int64_t& start, std::int64_t& end) {
  return !__builtin_add_overflow(start, base, &start) && !__builtin_add_overflow(end, base, &end);
}

template <typename T>
std::size_t shift_all(std::vector<T>& records, std::int64_t base) {
  const auto before = records.size();
  records.erase(std::remove_if(records.begin(), records.end(),
                               [base](T& r) { return !shifted(base, r.start_ns, r.end_ns); }),
                records.end());
  return before - records.size();
}

template <typename Window>
std::int64_t step_at(const std::vector<Window>& windows, std::int64_t ns) {
  auto it = std::upper_bound(windows.begin(), windows.end(), ns,
                             [](std::int64_t t, const Window& w) { return t < w.start_ns; });
  if (it == windows.begin()) return -1;
  --it;
  return ns < it->end_ns ? it->step : -1;
}

// How many flow ends one operator is offered to: Kineto puts an end at its op's own start, so the
// first matches; the bound keeps a hostile trace (one op enclosing every flow) linear.
constexpr int kMaxFlowBindWalk = 1024;

std::optional<std::pair<std::int64_t, std::int64_t>> span_of(const RawTraceEvent& e) {
  const auto begins = ns_after(0, e.ts_us);
  const auto ends = begins ? ns_after(*begins, std::max(0.0, e.dur_us)) : std::nullopt;
  if (!ends) return std::nullopt;
  return std::make_pair(*begins, *ends);
}

bool is_flow(const RawTraceEvent& e) { return e.cat == "fwdbwd"sv && (e.ph == "s"sv || e.ph == "f"sv) && e.id.has_value(); }

}  // namespace

// The index pass: ProfilerStep#N windows and flow ends, nothing else.
void ChromeTraceBuilder::index(const RawTraceEvent& e) {
  if (is_flow(e)) {
    if (const auto ts = ns_after(0, e.ts_us)) flows_->add(*e.id, e.tid, *ts, e.ph == "s"sv);
    return;
  }
  if (e.ph != "X"sv || (e.cat != "user_annotation"sv && e.cat != "gpu_user_annotation"sv)) return;
  const auto span = span_of(e);
  const auto step = profiler_step(e.name, options_.step_offset);
  if (span && step) (e.cat == "gpu_user_annotation"sv ? gpu_steps_ : cpu_steps_).push_back({span->first, span->second, *step});
}

ChromeTraceBuilder::ChromeTraceBuilder(ChromeTrace& out, const ChromeTraceOptions& options)
    : out_(out), options_(options), flows_(std::make_unique<FlowEndTable>()) {}

ChromeTraceBuilder::~ChromeTraceBuilder() = default;

void ChromeTraceBuilder::add(const RawTraceEvent& e) {
  if (!sink_) return index(e);
  if (is_flow(e)) return;  // kept by the index pass
  const auto span = e.ph == "X"sv ? span_of(e) : std::nullopt;
  std::int64_t start = span ? span->first : 0, end = span ? span->second : 0;
  if (!span || !shifted(out_.base_time_ns, start, end)) return void(++out_.skipped_events);
  if (e.cat == "kernel"sv || e.cat == "gpu_memcpy"sv || e.cat == "gpu_memset"sv) return add_activity(e, start, end);
  if (e.cat == "user_annotation"sv || e.cat == "gpu_user_annotation"sv || e.cat == kCpuOpDomain)
    return add_range(e, start, end);
  ++out_.skipped_events;  // cuda_runtime, cuda_driver, python_function, Trace, ...
}

void ChromeTraceBuilder::add_activity(const RawTraceEvent& e, std::int64_t start, std::int64_t end) {
  ActivityRecord a;
  a.kind = e.cat == "kernel"sv ? ActivityKind::kKernel : e.cat == "gpu_memcpy"sv ? ActivityKind::kMemcpy
                                                                             : ActivityKind::kMemset;
  a.name = a.kind == ActivityKind::kMemcpy ? memcpy_name(e.name) : a.kind == ActivityKind::kMemset ? "memset" : e.name;
  a.start_ns = start;
  a.end_ns = end;
  a.device = static_cast<int>(e.device.value_or(0));
  a.stream = e.stream.value_or(e.tid);
  a.bytes = e.bytes.value_or(0);
  a.grid = dim3_of(e.grid);
  a.block = dim3_of(e.block);
  if (e.registers) a.registers_per_thread = static_cast<int>(*e.registers);
  a.correlation_id = e.correlation;
  a.throughput_gbps = e.bandwidth_gbps;
  a.step = step_at(gpu_steps_.empty() ? cpu_steps_ : gpu_steps_, start);  // GPU work runs after its CPU window
  out_.activities.push_back(std::move(a));
  hand_over(false);
}

void ChromeTraceBuilder::add_range(const RawTraceEvent& e, std::int64_t start, std::int64_t end) {
  const bool gpu = e.cat == "gpu_user_annotation"sv;
  const bool op = e.cat == kCpuOpDomain;
  NvtxRange r{e.name, e.cat, start, end, gpu ? static_cast<int>(e.device.value_or(0)) : -1, e.stream.value_or(e.tid), -1};
  r.step = step_at(gpu ? (gpu_steps_.empty() ? cpu_steps_ : gpu_steps_) : cpu_steps_, start);
  if (op) {
    r.shapes = e.input_dims;
    r.external_id = e.external_id;
    r.sequence_number = e.sequence_number;
    r.forward_thread_id = e.forward_thread_id;
    ++out_.cpu_ops;
    // The flow ends keep the trace's own times: base_time_ns came after them in the file.
    flows_->bind(r.stream, start - out_.base_time_ns, end - out_.base_time_ns, r, kMaxFlowBindWalk);
  }
  out_.ranges.push_back(std::move(r));
  hand_over(false);
}

void ChromeTraceBuilder::hand_over(bool all) {
  if (!sink_) return;
  if (!out_.activities.empty() && (all || out_.activities.size() >= sink_->batch_records)) {
    sink_->activities(out_.activities);
    out_.activities.clear();
  }
  if (!out_.ranges.empty() && (all || out_.ranges.size() >= sink_->batch_records)) {
    sink_->ranges(out_.ranges);
    out_.ranges.clear();
  }
}

void ChromeTraceBuilder::start_emitting(const ChromeTraceSink& sink) {
  const std::int64_t base = out_.base_time_ns;
  shift_all(cpu_steps_, base);
  shift_all(gpu_steps_, base);
  auto by_start = [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns; };
  std::sort(cpu_steps_.begin(), cpu_steps_.end(), by_start);
  std::sort(gpu_steps_.begin(), gpu_steps_.end(), by_start);
  for (const auto& w : cpu_steps_) out_.step_windows.push_back({w.step, w.start_ns, w.end_ns});
  sink_ = &sink;
  if (sink.indexed) sink.indexed(out_);
}

void ChromeTraceBuilder::finish() {
  hand_over(true);
  out_.forward_backward_links = flows_->links(sink_->batch_records, sink_->links);
  flows_.reset();
}

void apply_forward_links(std::vector<NvtxRange>& ranges, const std::vector<ForwardLink>& links) {
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::optional<std::int64_t>>;
  std::map<Key, std::int64_t> forward_of;
  for (const auto& l : links) forward_of[{l.stream, l.start_ns, l.end_ns, l.external_id}] = l.forward_op_id;
  for (auto& r : ranges) {
    if (r.domain != kCpuOpDomain) continue;
    const auto it = forward_of.find({r.stream, r.start_ns, r.end_ns, r.external_id});
    if (it != forward_of.end()) r.forward_op_id = it->second;
  }
}

}  // namespace shardscope::sessions
