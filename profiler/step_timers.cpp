#include "profiler/step_timers.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <utility>

#ifdef SHARDSCOPE_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

#include "profiler/comms_logger.hpp"
#include "profiler/profiler_error.hpp"

namespace shardscope::profiler {
namespace {

#ifdef SHARDSCOPE_HAS_CUDA
void check(cudaError_t status, const char* call, const std::string& timer) {
  if (status == cudaSuccess) return;
  int device = -1;
  cudaGetDevice(&device);
  throw ProfilerError(std::string(call) + " failed for timer '" + timer + "' on device " + std::to_string(device) +
                      ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}
#define SHARDSCOPE_TIMER_CUDA(call, timer) check((call), #call, (timer))
#endif

double steady_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// A CUDA interval waiting to be read: its two events and the stream they were recorded on.
struct PendingInterval {
  void* start = nullptr;
  void* end = nullptr;
  void* stream = nullptr;
};

struct WallClockTimer::Impl {
  std::string name;
  std::function<double()> clock_ms;
  bool started = false;
  bool on_stream = false;
  double host_start = 0;
  void* event_start = nullptr;
  void* stream = nullptr;
  std::vector<double> records;           // resolved intervals, ms
  std::vector<PendingInterval> pending;  // CUDA intervals not read yet
  std::vector<void*> free_events;        // reused, so a step creates no events after the first

  ~Impl() {
#ifdef SHARDSCOPE_HAS_CUDA
    // Destroying an event still pending is allowed: CUDA releases it once it completes.
    for (auto* e : free_events) cudaEventDestroy(static_cast<cudaEvent_t>(e));
    for (const auto& p : pending) {
      cudaEventDestroy(static_cast<cudaEvent_t>(p.start));
      cudaEventDestroy(static_cast<cudaEvent_t>(p.end));
    }
    if (event_start) cudaEventDestroy(static_cast<cudaEvent_t>(event_start));
#endif
  }

#ifdef SHARDSCOPE_HAS_CUDA
  void* record_event(void* on) {
    cudaEvent_t event = nullptr;
    if (free_events.empty()) {
      SHARDSCOPE_TIMER_CUDA(cudaEventCreate(&event), name);
    } else {
      event = static_cast<cudaEvent_t>(free_events.back());
      free_events.pop_back();
    }
    SHARDSCOPE_TIMER_CUDA(cudaEventRecord(event, static_cast<cudaStream_t>(on)), name);
    return event;
  }

  // One synchronize per stream, on its last end event: a stream completes its events in order,
  // so every earlier interval of that stream is then complete too.
  void resolve() {
    if (pending.empty()) return;
    std::vector<std::pair<void*, void*>> last_per_stream;  // (stream, end event)
    for (const auto& p : pending) {
      auto it = std::find_if(last_per_stream.begin(), last_per_stream.end(),
                             [&](const auto& s) { return s.first == p.stream; });
      if (it == last_per_stream.end()) last_per_stream.emplace_back(p.stream, p.end);
      else it->second = p.end;
    }
    for (const auto& [s, end] : last_per_stream)
      SHARDSCOPE_TIMER_CUDA(cudaEventSynchronize(static_cast<cudaEvent_t>(end)), name);
    for (const auto& p : pending) {
      float ms = 0;
      SHARDSCOPE_TIMER_CUDA(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(p.start), static_cast<cudaEvent_t>(p.end)),
                            name);
      records.push_back(ms);
      free_events.push_back(p.start);
      free_events.push_back(p.end);
    }
    pending.clear();
  }
#else
  void resolve() {}
#endif
};

WallClockTimer::WallClockTimer(std::string name, std::function<double()> host_clock_ms)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->clock_ms = std::move(host_clock_ms);
}
WallClockTimer::~WallClockTimer() = default;
WallClockTimer::WallClockTimer(WallClockTimer&&) noexcept = default;
WallClockTimer& WallClockTimer::operator=(WallClockTimer&&) noexcept = default;

void WallClockTimer::start() {
  if (impl_->started) throw ProfilerError("timer '" + impl_->name + "' has already been started");
  impl_->host_start = impl_->clock_ms();
  impl_->on_stream = false;
  impl_->started = true;
}

void WallClockTimer::start_on_stream(void* cuda_stream) {
  if (impl_->started) throw ProfilerError("timer '" + impl_->name + "' has already been started");
#ifdef SHARDSCOPE_HAS_CUDA
  impl_->event_start = impl_->record_event(cuda_stream);
  impl_->stream = cuda_stream;
  impl_->on_stream = true;
  impl_->started = true;
#else
  (void)cuda_stream;
  throw ProfilerError("timer '" + impl_->name + "': this build has no CUDA; time it with start() on the host clock");
#endif
}

void WallClockTimer::stop() {
  if (!impl_->started) throw ProfilerError("timer '" + impl_->name + "' is not started");
  impl_->started = false;
  if (!impl_->on_stream) {
    impl_->records.push_back(impl_->clock_ms() - impl_->host_start);
    return;
  }
#ifdef SHARDSCOPE_HAS_CUDA
  impl_->pending.push_back({impl_->event_start, impl_->record_event(impl_->stream), impl_->stream});
  impl_->event_start = nullptr;
#endif
}

std::vector<double> WallClockTimer::intervals_ms() {
  impl_->resolve();
  return impl_->records;
}

double WallClockTimer::elapsed_ms(bool reset) {
  const bool was_running = impl_->started;
  void* stream = impl_->stream;
  const bool on_stream = impl_->on_stream;
  if (was_running) stop();
  impl_->resolve();
  const double total = std::accumulate(impl_->records.begin(), impl_->records.end(), 0.0);
  if (reset) impl_->records.clear();
  if (was_running) on_stream ? start_on_stream(stream) : start();
  return total;
}

double WallClockTimer::mean_ms() {
  const auto values = intervals_ms();
  return values.empty() ? 0.0 : trimmed_mean(values, 0.1);
}

void WallClockTimer::reset() {
  // No synchronize: an event still pending may be recorded again (cudaEventRecord replaces it).
  for (const auto& p : impl_->pending) impl_->free_events.insert(impl_->free_events.end(), {p.start, p.end});
  impl_->pending.clear();
  impl_->records.clear();
  if (impl_->event_start) impl_->free_events.push_back(impl_->event_start);
  impl_->event_start = nullptr;
  impl_->started = false;
}

bool WallClockTimer::running() const { return impl_->started; }
const std::string& WallClockTimer::name() const { return impl_->name; }

const std::vector<std::string>& microstep_timer_names() {
  static const std::vector<std::string> names = {timer_names::kForwardMicro, timer_names::kBackwardMicro,
                                                 timer_names::kBackwardInnerMicro, timer_names::kBackwardReduceMicro,
                                                 timer_names::kStepMicro};
  return names;
}

const std::vector<std::string>& global_timer_names() {
  static const std::vector<std::string> names = {timer_names::kForward, timer_names::kBackward,
                                                 timer_names::kBackwardInner, timer_names::kBackwardReduce,
                                                 timer_names::kStep};
  return names;
}

bool cuda_timers_available() {
#ifdef SHARDSCOPE_HAS_CUDA
  return true;
#else
  return false;
#endif
}

StepTimers::StepTimers() : StepTimers(steady_ms) {}
StepTimers::StepTimers(std::function<double()> clock_ms) : clock_ms_(std::move(clock_ms)) {}

WallClockTimer& StepTimers::operator()(const std::string& name) {
  auto it = timers_.find(name);
  if (it == timers_.end()) it = timers_.emplace(name, WallClockTimer(name, clock_ms_)).first;
  return it->second;
}

bool StepTimers::has(const std::string& name) const { return timers_.count(name) > 0; }

std::vector<std::string> StepTimers::names() const {
  std::vector<std::string> out;
  for (const auto& [name, timer] : timers_) out.push_back(name);
  return out;
}

std::vector<sessions::TimerValue> StepTimers::breakdown(const std::vector<std::string>& names, double normalizer,
                                                        bool reset) {
  if (!(normalizer > 0)) throw ProfilerError("timer normalizer must be > 0, got " + std::to_string(normalizer));
  std::vector<sessions::TimerValue> out;
  for (const auto& name : names) {
    auto it = timers_.find(name);
    if (it != timers_.end()) out.push_back({name, it->second.elapsed_ms(reset) / normalizer});
  }
  return out;
}

std::string StepTimers::log_line(const std::vector<std::string>& names, double normalizer, bool reset) {
  std::string line = "time (ms)";
  char value[64];
  for (const auto& t : breakdown(names, normalizer, reset)) {
    std::snprintf(value, sizeof value, "%.2f", t.ms);
    line += " | " + t.name + ": " + value;
  }
  return line;
}

std::map<std::string, double> StepTimers::means(const std::vector<std::string>& names, double normalizer) {
  if (!(normalizer > 0)) throw ProfilerError("timer normalizer must be > 0, got " + std::to_string(normalizer));
  std::map<std::string, double> out;
  for (const auto& name : names) {
    auto it = timers_.find(name);
    if (it != timers_.end()) out[name] = it->second.mean_ms() / normalizer;
  }
  return out;
}

}  // namespace shardscope::profiler
