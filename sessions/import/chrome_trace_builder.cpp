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

// How far back a flow end looks for the operator enclosing it: Kineto puts it at the op's own
// start, so the first candidate matches; the bound keeps a hostile trace linear.
constexpr int kMaxFlowBindWalk = 1024;

}  // namespace

void ChromeTraceBuilder::add(const RawTraceEvent& e) {
  if (e.cat == "fwdbwd" && (e.ph == "s" || e.ph == "f") && e.id) {
    if (const auto ts = ns_after(0, e.ts_us)) return flows_.push_back({*e.id, e.tid, *ts, e.ph == "s"});
  }
  if (e.ph != "X") return void(++out_.skipped_events);
  const auto begins = ns_after(0, e.ts_us);
  const auto ends = begins ? ns_after(*begins, std::max(0.0, e.dur_us)) : std::nullopt;
  if (!ends) return void(++out_.skipped_events);
  if (e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset") return add_activity(e, *begins, *ends);
  if (e.cat == "user_annotation" || e.cat == "gpu_user_annotation" || e.cat == kCpuOpDomain)
    return add_range(e, *begins, *ends);
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
  out_.activities.push_back(std::move(a));
}

void ChromeTraceBuilder::add_range(const RawTraceEvent& e, std::int64_t start, std::int64_t end) {
  const bool gpu = e.cat == "gpu_user_annotation";
  const bool op = e.cat == kCpuOpDomain;
  if (!op)
    if (auto step = profiler_step(e.name, options_.step_offset))
      (gpu ? gpu_steps_ : cpu_steps_).push_back({start, end, *step});
  NvtxRange r{e.name, e.cat, start, end, gpu ? static_cast<int>(e.device.value_or(0)) : -1, e.stream.value_or(e.tid), -1};
  if (op) {
    r.shapes = e.input_dims;
    r.external_id = e.external_id;
    r.sequence_number = e.sequence_number;
    r.forward_thread_id = e.forward_thread_id;
    ++out_.cpu_ops;
  }
  out_.ranges.push_back(std::move(r));
}

void ChromeTraceBuilder::shift_to_epoch() {
  const std::int64_t base = out_.base_time_ns;
  if (base == 0) return;
  out_.skipped_events += shift_all(out_.activities, base);
  const auto ops_before = std::count_if(out_.ranges.begin(), out_.ranges.end(),
                                        [](const NvtxRange& r) { return r.domain == kCpuOpDomain; });
  out_.skipped_events += shift_all(out_.ranges, base);
  out_.cpu_ops -= static_cast<std::size_t>(
      ops_before - std::count_if(out_.ranges.begin(), out_.ranges.end(),
                                 [](const NvtxRange& r) { return r.domain == kCpuOpDomain; }));
  shift_all(cpu_steps_, base);
  shift_all(gpu_steps_, base);
  flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                              [base](FlowEnd& f) { return __builtin_add_overflow(f.ts_ns, base, &f.ts_ns); }),
               flows_.end());
}

// Kineto links a forward op to the backward op autograd ran for it by a "fwdbwd" flow: "s" at the
// forward op's start, "f" (binding point "e", the enclosing slice) at the backward op's start, on
// their threads. Each end binds to the innermost CPU op of its thread that encloses its time.
void ChromeTraceBuilder::link_forward_backward() {
  if (flows_.empty()) return;
  auto& ranges = out_.ranges;
  std::vector<std::size_t> ops;  // by thread, start, longest first: the innermost of equal starts last
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].domain == kCpuOpDomain) ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&ranges](std::size_t a, std::size_t b) {
    const NvtxRange &x = ranges[a], &y = ranges[b];
    return std::tie(x.stream, x.start_ns, y.end_ns) < std::tie(y.stream, y.start_ns, x.end_ns);
  });
  auto bind = [&](const FlowEnd& f) -> std::optional<std::size_t> {
    auto it = std::upper_bound(ops.begin(), ops.end(), std::make_pair(f.tid, f.ts_ns),
                               [&ranges](const std::pair<std::int64_t, std::int64_t>& at, std::size_t i) {
                                 return at < std::make_pair(ranges[i].stream, ranges[i].start_ns);
                               });
    for (int walked = 0; it != ops.begin() && walked < kMaxFlowBindWalk; ++walked) {
      const NvtxRange& r = ranges[*--it];
      if (r.stream != f.tid) break;
      if (r.end_ns >= f.ts_ns) return *it;
    }
    return std::nullopt;
  };
  std::map<std::int64_t, std::pair<std::optional<std::size_t>, std::vector<std::size_t>>> by_id;
  for (const auto& f : flows_) {
    const auto op = bind(f);
    if (!op) continue;
    auto& [forward, backward] = by_id[f.id];
    if (f.start) forward = op;
    else backward.push_back(*op);
  }
  for (const auto& [id, ends] : by_id) {
    if (!ends.first || !ranges[*ends.first].external_id) continue;
    for (const std::size_t b : ends.second) {
      ranges[b].forward_op_id = ranges[*ends.first].external_id;
      ++out_.forward_backward_links;
    }
  }
  flows_.clear();
  flows_.shrink_to_fit();
}

void ChromeTraceBuilder::assign_steps() {
  auto by_start = [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns; };
  std::sort(cpu_steps_.begin(), cpu_steps_.end(), by_start);
  std::sort(gpu_steps_.begin(), gpu_steps_.end(), by_start);
  const auto& device_windows = gpu_steps_.empty() ? cpu_steps_ : gpu_steps_;  // GPU work runs after its CPU window
  for (auto& a : out_.activities) a.step = step_at(device_windows, a.start_ns);
  for (auto& r : out_.ranges) r.step = step_at(r.device >= 0 ? device_windows : cpu_steps_, r.start_ns);
  for (const auto& w : cpu_steps_) out_.step_windows.push_back({w.step, w.start_ns, w.end_ns});
}

void ChromeTraceBuilder::finish() {
  shift_to_epoch();
  link_forward_backward();
  assign_steps();
  std::sort(out_.activities.begin(), out_.activities.end(),
            [](const ActivityRecord& a, const ActivityRecord& b) { return a.start_ns < b.start_ns; });
  std::sort(out_.ranges.begin(), out_.ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
}

}  // namespace shardscope::sessions
