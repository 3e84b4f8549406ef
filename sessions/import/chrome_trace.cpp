#include "sessions/import/chrome_trace.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <optional>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace {

// One trace event reduced to the fields used here, as the SAX pass sees them.
struct RawEvent {
  std::string ph, cat, name;
  double ts_us = NAN, dur_us = 0;
  std::int64_t tid = 0;
  std::optional<std::int64_t> device, stream, correlation, bytes, registers;
  std::optional<double> bandwidth_gbps;
  std::vector<std::int64_t> grid, block;
};

// llround is unspecified outside int64's range: a float field of a corrupt trace saturates instead.
std::int64_t saturated_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<std::int64_t>(std::llround(v));
}

class TraceSax {
 public:
  explicit TraceSax(ChromeTrace& out) : out_(out) {}
  std::vector<RawEvent> events;
  bool saw_trace_events = false;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(std::int64_t v) { return number(static_cast<double>(v), v); }
  bool number_unsigned(std::uint64_t v) {
    return number(static_cast<double>(v), v > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v));
  }
  bool number_float(double v, const std::string&) { return number(v, saturated_int64(v)); }
  bool string(std::string& v);
  bool binary(std::vector<std::uint8_t>&) { return true; }
  bool start_object(std::size_t) {
    ++depth_;
    if (in_events() && depth_ == 3) current_ = RawEvent{};
    return true;
  }
  bool end_object() {
    if (in_events() && depth_ == 3) events.push_back(std::move(current_));
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    if (depth_ == 2 && key_[1] == "traceEvents") saw_trace_events = events_array_ = true;
    return true;
  }
  bool end_array() {
    if (depth_ == 2) events_array_ = false;
    --depth_;
    return true;
  }
  bool key(std::string& k) {
    if (depth_ < static_cast<int>(std::size(key_))) key_[depth_] = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_position = position;
    error_text = e.what();
    return false;
  }
  std::size_t error_position = 0;
  std::string error_text;

 private:
  bool in_events() const { return events_array_; }
  bool number(double v, std::int64_t i);
  ChromeTrace& out_;
  int depth_ = 0;
  bool events_array_ = false;
  std::string key_[8];
  RawEvent current_;
};

bool TraceSax::string(std::string& v) {
  if (in_events() && depth_ == 3) {
    if (key_[3] == "ph") current_.ph = v;
    else if (key_[3] == "cat") current_.cat = v;
    else if (key_[3] == "name") current_.name = v;
  } else if (depth_ == 2 && key_[1] == "distributedInfo" && key_[2] == "backend") {
    out_.backend = v;
  }
  return true;
}

bool TraceSax::number(double v, std::int64_t i) {
  if (in_events() && depth_ == 3) {
    const std::string& k = key_[3];
    if (k == "ts") current_.ts_us = v;
    else if (k == "dur") current_.dur_us = v;
    else if (k == "tid") current_.tid = i;
  } else if (in_events() && depth_ == 4 && key_[3] == "args") {
    const std::string& k = key_[4];
    if (k == "device") current_.device = i;
    else if (k == "stream") current_.stream = i;
    else if (k == "correlation") current_.correlation = i;
    else if (k == "bytes") current_.bytes = i;
    else if (k == "registers per thread") current_.registers = i;
    else if (k == "memory bandwidth (GB/s)") current_.bandwidth_gbps = v;
  } else if (in_events() && depth_ == 5 && key_[3] == "args" && (key_[4] == "grid" || key_[4] == "block")) {
    auto& dims = key_[4] == "grid" ? current_.grid : current_.block;
    if (dims.size() < 3) dims.push_back(i);
  } else if (depth_ == 1 && key_[1] == "baseTimeNanoseconds") {
    out_.base_time_ns = i;
  } else if (depth_ == 2 && key_[1] == "distributedInfo") {
    if (key_[2] == "rank" && i >= 0 && i < (1 << 20)) out_.rank = static_cast<int>(i);
    if (key_[2] == "world_size" && i > 0 && i < (1 << 20)) out_.world_size = static_cast<int>(i);
  }
  return true;
}

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

struct StepWindow {
  std::int64_t start_ns, end_ns, step;
};

std::optional<std::int64_t> profiler_step(const std::string& name, std::int64_t offset) {
  if (!starts_with(name, "ProfilerStep#")) return std::nullopt;
  const auto n = parse_integer(std::string_view(name).substr(13));
  return n ? std::optional<std::int64_t>(*n + offset) : std::nullopt;
}

std::int64_t step_at(const std::vector<StepWindow>& windows, std::int64_t ns) {
  auto it = std::upper_bound(windows.begin(), windows.end(), ns,
                             [](std::int64_t t, const StepWindow& w) { return t < w.start_ns; });
  if (it == windows.begin()) return -1;
  --it;
  return ns < it->end_ns ? it->step : -1;
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

void convert_event(const RawEvent& e, ChromeTrace& out, std::vector<StepWindow>& cpu_steps,
                   std::vector<StepWindow>& gpu_steps, const ChromeTraceOptions& options) {
  if (e.ph != "X") return void(++out.skipped_events);
  const auto begins = ns_after(out.base_time_ns, e.ts_us);
  const auto ends = begins ? ns_after(*begins, std::max(0.0, e.dur_us)) : std::nullopt;
  if (!ends) return void(++out.skipped_events);
  const std::int64_t start = *begins, end = *ends;
  if (e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset") {
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
    out.activities.push_back(std::move(a));
    return;
  }
  if (e.cat == "user_annotation" || e.cat == "gpu_user_annotation") {
    const bool gpu = e.cat == "gpu_user_annotation";
    if (auto step = profiler_step(e.name, options.step_offset))
      (gpu ? gpu_steps : cpu_steps).push_back({start, end, *step});
    out.ranges.push_back({e.name, e.cat, start, end, gpu ? static_cast<int>(e.device.value_or(0)) : -1,
                          e.stream.value_or(e.tid), -1});
    return;
  }
  ++out.skipped_events;  // cpu_op, cuda_runtime, python_function, ...: the CPU side is not a profiled window
}

void assign_steps(ChromeTrace& out, std::vector<StepWindow>& cpu, std::vector<StepWindow>& gpu) {
  auto by_start = [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns; };
  std::sort(cpu.begin(), cpu.end(), by_start);
  std::sort(gpu.begin(), gpu.end(), by_start);
  const auto& device_windows = gpu.empty() ? cpu : gpu;  // GPU work runs after its CPU window
  for (auto& a : out.activities) a.step = step_at(device_windows, a.start_ns);
  for (auto& r : out.ranges) r.step = step_at(r.device >= 0 ? device_windows : cpu, r.start_ns);
  std::sort(out.activities.begin(), out.activities.end(),
            [](const ActivityRecord& a, const ActivityRecord& b) { return a.start_ns < b.start_ns; });
  std::sort(out.ranges.begin(), out.ranges.end(),
            [](const NvtxRange& a, const NvtxRange& b) { return a.start_ns < b.start_ns; });
}

}  // namespace

ChromeTrace parse_chrome_trace(std::string_view json_text, const std::string& file, const ChromeTraceOptions& options) {
  ChromeTrace out;
  TraceSax sax(out);
  const bool ok = nlohmann::json::sax_parse(json_text.begin(), json_text.end(), &sax);
  if (!ok)
    throw ImportError(file + ": byte " + std::to_string(sax.error_position) + ": not a valid Chrome trace JSON: " +
                      sax.error_text);
  if (!sax.saw_trace_events)
    throw ImportError(file + ": no \"traceEvents\" array at the top level; is this a PyTorch profiler trace "
                      "(prof.export_chrome_trace / tensorboard_trace_handler)?");
  std::vector<StepWindow> cpu_steps, gpu_steps;
  for (const auto& e : sax.events) convert_event(e, out, cpu_steps, gpu_steps, options);
  assign_steps(out, cpu_steps, gpu_steps);
  return out;
}

namespace {

std::string hex_byte(char c) {
  static const char* kHex = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  return {kHex[byte >> 4], kHex[byte & 15]};
}

}  // namespace

ChromeTrace read_chrome_trace(const std::string& path, const ChromeTraceOptions& options) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw ImportError(path + ": gzip-compressed traces are not read directly; gunzip it first");
  // A trace is JSON: its first byte after white space opens an object or an array. Checked on the
  // first 4 KiB, so a 2 GB file of something else is refused before it is read.
  const std::string head = read_file_from(path, 0, 4096);
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] != '{' && head[first] != '[')
    throw ImportError(path + ": not a Chrome trace: a trace is JSON starting with '{' or '[', this file starts with "
                             "byte 0x" + hex_byte(head[first]) + " at offset " + std::to_string(first) +
                      "; pass the .json the PyTorch profiler wrote (tensorboard_trace_handler or export_chrome_trace)");
  return parse_chrome_trace(read_file_bytes(path, kMaxTraceFileBytes), path, options);
}

std::optional<int> rank_from_trace_file_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  auto digits_at = [&](std::size_t at) -> std::optional<int> {
    std::size_t end = at;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == at || end - at > 6) return std::nullopt;
    return std::stoi(name.substr(at, end - at));
  };
  for (std::size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    std::size_t digits = at + 4;
    while (digits < name.size() && (name[digits] == '_' || name[digits] == '-')) ++digits;
    if (auto rank = digits_at(digits)) return rank;
  }
  return std::nullopt;
}

}  // namespace shardscope::sessions
