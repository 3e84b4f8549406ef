#include "sessions/import/chrome_trace_builder.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
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

bool is_flow(const RawTraceEvent& e) { return e.cat == "fwdbwd" && (e.ph == "s" || e.ph == "f") && e.id.has_value(); }

}  // namespace

// The index pass: ProfilerStep#N windows and flow ends, nothing else.
void ChromeTraceBuilder::index(const RawTraceEvent& e) {
  if (is_flow(e)) {
    if (const auto ts = ns_after(0, e.ts_us)) flows_.push_back({*e.id, e.tid, *ts, e.ph == "s", false, 0, 0, std::nullopt});
    return;
  }
  if (e.ph != "X" || (e.cat != "user_annotation" && e.cat != "gpu_user_annotation")) return;
  const auto span = span_of(e);
  const auto step = profiler_step(e.name, options_.step_offset);
  if (span && step) (e.cat == "gpu_user_annotation" ? gpu_steps_ : cpu_steps_).push_back({span->first, span->second, *step});
}

void ChromeTraceBuilder::add(const RawTraceEvent& e) {
  if (!sink_) return index(e);
  if (is_flow(e)) return;  // kept by the index pass
  const auto span = e.ph == "X" ? span_of(e) : std::nullopt;
  std::int64_t start = span ? span->first : 0, end = span ? span->second : 0;
  if (!span || !shifted(out_.base_time_ns, start, end)) return void(++out_.skipped_events);
  if (e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset") return add_activity(e, start, end);
  if (e.cat == "user_annotation" || e.cat == "gpu_user_annotation" || e.cat == kCpuOpDomain)
    return add_range(e, start, end);
  ++out_.skipped_events;  // cuda_runtime, cuda_driver, python_function, Trace, ...
}

void ChromeTraceBuilder::add_activity(const RawTraceEvent& e, std::int64_t start, std::int64_t end) {
  ActivityRecord a;
  a.kind = e.cat == "kernel" ? ActivityKind::kKernel : e.cat == "gpu_memcpy" ? ActivityKind::kMemcpy
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
  const bool gpu = e.cat == "gpu_user_annotation";
  const bool op = e.cat == kCpuOpDomain;
  NvtxRange r{e.name, e.cat, start, end, gpu ? static_cast<int>(e.device.value_or(0)) : -1, e.stream.value_or(e.tid), -1};
  r.step = step_at(gpu ? (gpu_steps_.empty() ? cpu_steps_ : gpu_steps_) : cpu_steps_, start);
  if (op) {
    r.shapes = e.input_dims;
    r.external_id = e.external_id;
    r.sequence_number = e.sequence_number;
    r.forward_thread_id = e.forward_thread_id;
    ++out_.cpu_ops;
    bind_flows(r);
  }
  out_.ranges.push_back(std::move(r));
  hand_over(false);
}

// Kineto links a forward op to the backward op autograd ran for it by a "fwdbwd" flow: "s" at the
// forward op's start, "f" (binding point "e", the enclosing slice) at the backward op's start, on
// their threads. Each end binds to the innermost CPU op of its thread that encloses its time: the
// latest start, then the earliest end. The flows an op encloses are a range of the sorted ends;
// the walk is bounded so a hostile trace stays linear.
void ChromeTraceBuilder::bind_flows(const NvtxRange& op) {
  auto it = std::lower_bound(flows_.begin(), flows_.end(), std::make_pair(op.stream, op.start_ns),
                             [](const FlowEnd& f, const std::pair<std::int64_t, std::int64_t>& at) {
                               return std::make_pair(f.tid, f.ts_ns) < at;
                             });
  for (int walked = 0; it != flows_.end() && it->tid == op.stream && it->ts_ns <= op.end_ns && walked < kMaxFlowBindWalk;
       ++it, ++walked) {
    FlowEnd& f = *it;
    if (f.bound && std::make_pair(f.op_start, -f.op_end) >= std::make_pair(op.start_ns, -op.end_ns)) continue;
    f.bound = true;
    f.op_start = op.start_ns;
    f.op_end = op.end_ns;
    f.op_external_id = op.external_id;
  }
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
  flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                              [base](FlowEnd& f) { return __builtin_add_overflow(f.ts_ns, base, &f.ts_ns); }),
               flows_.end());
  auto by_start = [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns; };
  std::sort(cpu_steps_.begin(), cpu_steps_.end(), by_start);
  std::sort(gpu_steps_.begin(), gpu_steps_.end(), by_start);
  std::sort(flows_.begin(), flows_.end(),
            [](const FlowEnd& a, const FlowEnd& b) { return std::tie(a.tid, a.ts_ns) < std::tie(b.tid, b.ts_ns); });
  for (const auto& w : cpu_steps_) out_.step_windows.push_back({w.step, w.start_ns, w.end_ns});
  sink_ = &sink;
  if (sink.indexed) sink.indexed(out_);
}

std::vector<ForwardLink> ChromeTraceBuilder::finish() {
  hand_over(true);
  std::map<std::int64_t, std::pair<const FlowEnd*, std::vector<const FlowEnd*>>> by_id;
  for (const auto& f : flows_) {
    if (!f.bound) continue;
    auto& [forward, backward] = by_id[f.id];
    if (f.start) forward = &f;
    else backward.push_back(&f);
  }
  std::vector<ForwardLink> links;
  for (const auto& [id, ends] : by_id) {
    if (!ends.first || !ends.first->op_external_id) continue;
    for (const FlowEnd* b : ends.second)
      links.push_back({b->tid, b->op_start, b->op_end, b->op_external_id, *ends.first->op_external_id});
  }
  out_.forward_backward_links = links.size();
  flows_.clear();
  flows_.shrink_to_fit();
  return links;
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
