#include "profiler/cupti_activity.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#ifdef SHARDSCOPE_HAS_CUPTI
#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>

#include <cupti.h>
#endif

#include "profiler/profiler_error.hpp"

namespace shardscope::profiler {

std::int64_t host_unix_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool cupti_activity_available() {
#ifdef SHARDSCOPE_HAS_CUPTI
  return true;
#else
  return false;
#endif
}

struct CuptiActivityState {
  CuptiActivityOptions options;
  CuptiActivityCollector::ActivitySink activity_sink;
  CuptiActivityCollector::NvtxSink nvtx_sink;
  bool running = false;

  // Filled on CUPTI's buffer thread, drained on the caller's: guarded by `mutex`.
  mutable std::mutex mutex;
  std::vector<sessions::ActivityRecord> activities;  // CUPTI timestamps, step unset
  std::vector<sessions::NvtxRange> ranges;           // CUPTI timestamps, step unset
  std::map<std::uint32_t, sessions::NvtxRange> open_ranges;  // marker id -> start seen, end not yet
  CuptiActivityStats stats;

  // (CUPTI ns, host Unix ns - CUPTI ns) measured at start, each flush and stop.
  std::vector<std::pair<std::int64_t, double>> clock_points;
  std::vector<std::pair<std::int64_t, std::int64_t>> step_marks;  // (host Unix ns, step)

  double offset_at(std::int64_t cupti_ns) const;
  std::int64_t step_at(std::int64_t host_ns) const;
  void measure_clock();
  void emit();
};

// Host = CUPTI + offset, the offset interpolated linearly between its measurements (the two
// clocks drift by microseconds per minute; a window is seconds, so two points bound the error).
double CuptiActivityState::offset_at(std::int64_t t) const {
  if (clock_points.empty()) return 0;
  if (t <= clock_points.front().first) return clock_points.front().second;
  for (std::size_t i = 1; i < clock_points.size(); ++i) {
    const auto& [t1, o1] = clock_points[i];
    if (t > t1) continue;
    const auto& [t0, o0] = clock_points[i - 1];
    return t1 == t0 ? o1 : o0 + (o1 - o0) * static_cast<double>(t - t0) / static_cast<double>(t1 - t0);
  }
  return clock_points.back().second;
}

std::int64_t CuptiActivityState::step_at(std::int64_t host_ns) const {
  auto it = std::upper_bound(step_marks.begin(), step_marks.end(), std::make_pair(host_ns, INT64_MAX));
  return it == step_marks.begin() ? -1 : std::prev(it)->second;
}

void CuptiActivityState::emit() {
  std::vector<sessions::ActivityRecord> a;
  std::vector<sessions::NvtxRange> n;
  {
    std::lock_guard<std::mutex> lock(mutex);
    a.swap(activities);
    n.swap(ranges);
  }
  auto to_host = [this](std::int64_t t) { return t + static_cast<std::int64_t>(offset_at(t)); };
  for (auto& r : a) {
    r.start_ns = to_host(r.start_ns);
    r.end_ns = to_host(r.end_ns);
    r.step = step_at(r.start_ns);
  }
  for (auto& r : n) {
    r.start_ns = to_host(r.start_ns);
    r.end_ns = to_host(r.end_ns);
    r.step = step_at(r.start_ns);
  }
  const std::size_t per_batch = std::max<std::size_t>(options.batch_records, 1);
  for (std::size_t i = 0; i < a.size() && activity_sink; i += per_batch)
    activity_sink({options.rank, {a.begin() + static_cast<long>(i), a.begin() + static_cast<long>(std::min(a.size(), i + per_batch))}});
  for (std::size_t i = 0; i < n.size() && nvtx_sink; i += per_batch)
    nvtx_sink({options.rank, {n.begin() + static_cast<long>(i), n.begin() + static_cast<long>(std::min(n.size(), i + per_batch))}});
}

#ifdef SHARDSCOPE_HAS_CUPTI
namespace {

std::atomic<CuptiActivityState*> g_active{nullptr};

void check(CUptiResult result, const char* call, int rank) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  throw ProfilerError(std::string(call) + " failed on rank " + std::to_string(rank) + ": " +
                      (text ? text : "unknown CUPTI error") + " (code " + std::to_string(static_cast<int>(result)) + ")");
}
#define SHARDSCOPE_CUPTI(call, rank) check((call), #call, (rank))

std::string demangled(const char* name) {
  if (!name) return "";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && out ? out : name;
  std::free(out);
  return text;
}

const char* copy_kind_name(std::uint8_t kind) {
  static const char* kNames[] = {"memcpy", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "memcpy";
}

std::optional<double> throughput(std::uint64_t bytes, std::uint64_t start, std::uint64_t end) {
  if (end <= start) return std::nullopt;
  return static_cast<double>(bytes) / static_cast<double>(end - start);  // bytes per ns = GB/s
}

sessions::ActivityRecord kernel_record(const CUpti_ActivityKernel10& k) {
  sessions::ActivityRecord r{sessions::ActivityKind::kKernel, demangled(k.name), static_cast<std::int64_t>(k.start),
                             static_cast<std::int64_t>(k.end), static_cast<int>(k.deviceId), k.streamId, 0, -1};
  r.grid = sessions::Dim3{k.gridX, k.gridY, k.gridZ};
  r.block = sessions::Dim3{k.blockX, k.blockY, k.blockZ};
  r.registers_per_thread = k.registersPerThread;
  r.correlation_id = k.correlationId;
  return r;
}

void on_marker(CuptiActivityState& impl, const CUpti_ActivityMarker2& m) {
  const bool thread = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD;
  if (m.flags & (CUPTI_ACTIVITY_FLAG_MARKER_START | CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)) {
    sessions::NvtxRange r{m.name ? m.name : "", m.domain ? m.domain : "", static_cast<std::int64_t>(m.timestamp),
                          static_cast<std::int64_t>(m.timestamp), -1,
                          thread ? static_cast<std::int64_t>(m.objectId.pt.threadId) : 0, -1};
    if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) impl.ranges.push_back(std::move(r)), ++impl.stats.nvtx_ranges;
    else impl.open_ranges[m.id] = std::move(r);
  } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = impl.open_ranges.find(m.id);
    if (it == impl.open_ranges.end()) return;  // its start came before the window
    it->second.end_ns = static_cast<std::int64_t>(m.timestamp);
    impl.ranges.push_back(std::move(it->second));
    impl.open_ranges.erase(it);
    ++impl.stats.nvtx_ranges;
  }
}

void on_record(CuptiActivityState& impl, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      impl.activities.push_back(kernel_record(*reinterpret_cast<const CUpti_ActivityKernel10*>(record)));
      ++impl.stats.kernels;
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& c = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      sessions::ActivityRecord r{sessions::ActivityKind::kMemcpy, copy_kind_name(c.copyKind), static_cast<std::int64_t>(c.start),
                                 static_cast<std::int64_t>(c.end), static_cast<int>(c.deviceId), c.streamId,
                                 static_cast<std::int64_t>(c.bytes), -1};
      r.correlation_id = c.correlationId;
      r.throughput_gbps = throughput(c.bytes, c.start, c.end);
      impl.activities.push_back(std::move(r));
      ++impl.stats.memcpys;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& s = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      sessions::ActivityRecord r{sessions::ActivityKind::kMemset, "memset", static_cast<std::int64_t>(s.start),
                                 static_cast<std::int64_t>(s.end), static_cast<int>(s.deviceId), s.streamId,
                                 static_cast<std::int64_t>(s.bytes), -1};
      r.correlation_id = s.correlationId;
      r.throughput_gbps = throughput(s.bytes, s.start, s.end);
      impl.activities.push_back(std::move(r));
      ++impl.stats.memsets;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: on_marker(impl, *reinterpret_cast<const CUpti_ActivityMarker2*>(record)); break;
    default: break;
  }
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  auto* impl = g_active.load();
  *size = impl ? impl->options.buffer_bytes : (std::size_t(8) << 20);
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;  // as many as fit
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (auto* impl = g_active.load()) {
    std::lock_guard<std::mutex> lock(impl->mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) on_record(*impl, record);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
      impl->stats.dropped += static_cast<std::int64_t>(dropped);
    ++impl->stats.buffers;
  }
  std::free(buffer);
}

std::vector<CUpti_ActivityKind> kinds_of(const CuptiActivityOptions& o) {
  std::vector<CUpti_ActivityKind> kinds;
  if (o.kernels) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (o.memcpy) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (o.memset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (o.nvtx) kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
  return kinds;
}

}  // namespace

void CuptiActivityState::measure_clock() {
  // Bracket CUPTI's clock between two host reads and take the midpoint.
  const std::int64_t before = host_unix_ns();
  uint64_t cupti = 0;
  SHARDSCOPE_CUPTI(cuptiGetTimestamp(&cupti), options.rank);
  const std::int64_t after = host_unix_ns();
  const double offset = static_cast<double>(before) + static_cast<double>(after - before) / 2 - static_cast<double>(cupti);
  std::lock_guard<std::mutex> lock(mutex);
  clock_points.emplace_back(static_cast<std::int64_t>(cupti), offset);
  stats.clock_offset_ns = offset;
  stats.clock_drift_ns = offset - clock_points.front().second;
}

void CuptiActivityCollector::start() {
  if (impl_->running) throw ProfilerError("CUPTI activity window of rank " + std::to_string(impl_->options.rank) + " is already open");
  CuptiActivityState* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, impl_.get()))
    throw ProfilerError("another CUPTI activity collector is running in this process; stop it first");
  try {
    SHARDSCOPE_CUPTI(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed), impl_->options.rank);
    impl_->measure_clock();
    for (const auto kind : kinds_of(impl_->options)) SHARDSCOPE_CUPTI(cuptiActivityEnable(kind), impl_->options.rank);
  } catch (...) {
    for (const auto kind : kinds_of(impl_->options)) cuptiActivityDisable(kind);
    g_active.store(nullptr);
    throw;
  }
  impl_->running = true;
}

void CuptiActivityCollector::flush() {
  if (!impl_->running) return impl_->emit();
  SHARDSCOPE_CUPTI(cuptiActivityFlushAll(0), impl_->options.rank);
  impl_->measure_clock();
  impl_->emit();
}

void CuptiActivityCollector::stop() {
  if (!impl_->running) return;
  impl_->running = false;
  for (const auto kind : kinds_of(impl_->options)) cuptiActivityDisable(kind);
  // Forced: hand back every buffer, also the ones not full, before the collector lets go.
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  impl_->measure_clock();
  g_active.store(nullptr);
  impl_->emit();
  SHARDSCOPE_CUPTI(flushed, impl_->options.rank);
}
#else
void CuptiActivityState::measure_clock() {}
void CuptiActivityCollector::start() {
  throw ProfilerError("this build has no CUPTI (configure on a machine with the CUDA toolkit's CUPTI to profile a "
                      "window of steps)");
}
void CuptiActivityCollector::flush() { impl_->emit(); }
void CuptiActivityCollector::stop() {}
#endif

CuptiActivityCollector::CuptiActivityCollector(CuptiActivityOptions options, ActivitySink activities, NvtxSink nvtx)
    : impl_(std::make_unique<CuptiActivityState>()) {
  impl_->options = options;
  impl_->activity_sink = std::move(activities);
  impl_->nvtx_sink = std::move(nvtx);
}

CuptiActivityCollector::~CuptiActivityCollector() {
  try {
    stop();
  } catch (...) {
    // A destructor cannot report; stop() explicitly to see CUPTI's error.
  }
}

void CuptiActivityCollector::begin_step(std::int64_t step) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->step_marks.emplace_back(host_unix_ns(), step);
}

bool CuptiActivityCollector::running() const { return impl_->running; }

CuptiActivityStats CuptiActivityCollector::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

std::string cupti_library_path() {
#ifdef SHARDSCOPE_HAS_CUPTI
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname) return info.dli_fname;
#endif
  return {};
}

}  // namespace shardscope::profiler
