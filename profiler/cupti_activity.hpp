#pragma once
// CUPTI activity collection for a window of steps (issue 8, item 2): kernels (demangled name, grid,
// block, registers, stream, device, correlation id), memcpy (kind, bytes, throughput), memset and
// NVTX ranges (CUPTI_ACTIVITY_KIND_MARKER), with GPU timestamps mapped to the host's Unix clock, so
// ranks on different hosts line up. Records leave as sessions::ActivityBatch / NvtxBatch through
// callbacks (the engine connects them to the rank's EventSink). docs/profiler.md, "CUPTI".
//
// Outside the window nothing is enabled, so CUPTI costs nothing there. CUPTI's callbacks are
// process-wide: one collector may run at a time. Compiled only with CUDA and CUPTI
// (cupti_activity_available()); elsewhere start() throws ProfilerError saying so.

#include <cstddef>
#include <cstdint>
#include <string>
#include <functional>
#include <memory>

#include "sessions/events.hpp"

namespace shardscope::profiler {

struct CuptiActivityOptions {
  int rank = 0;
  bool kernels = true;
  bool memcpy = true;
  bool memset = true;
  bool nvtx = true;  ///< NVTX ranges; needs NVTX_INJECTION64_PATH=libcupti.so in the rank's environment
  std::size_t buffer_bytes = std::size_t(8) << 20;  ///< per CUPTI buffer
  std::size_t batch_records = 4096;                 ///< records per emitted batch
};

struct CuptiActivityStats {
  std::int64_t kernels = 0, memcpys = 0, memsets = 0, nvtx_ranges = 0;
  std::int64_t dropped = 0;          ///< records CUPTI dropped (buffers full)
  std::int64_t buffers = 0;          ///< buffers CUPTI completed
  double clock_offset_ns = 0;        ///< host Unix ns - CUPTI ns, last measured
  double clock_drift_ns = 0;         ///< change of that offset between start and stop
};

/// Whether this build can collect CUPTI activity.
bool cupti_activity_available();

/// Host Unix time in ns (CLOCK_REALTIME), the clock records are converted to.
std::int64_t host_unix_ns();

struct CuptiActivityState;  // cupti_activity.cpp; CUPTI's C callbacks reach it too

class CuptiActivityCollector {
 public:
  using ActivitySink = std::function<void(sessions::ActivityBatch&&)>;
  using NvtxSink = std::function<void(sessions::NvtxBatch&&)>;

  /// Sinks are called on the thread that calls flush() or stop(), never on CUPTI's thread.
  CuptiActivityCollector(CuptiActivityOptions options, ActivitySink activities, NvtxSink nvtx);
  /// Stops a running window (its records are still emitted).
  ~CuptiActivityCollector();
  CuptiActivityCollector(const CuptiActivityCollector&) = delete;
  CuptiActivityCollector& operator=(const CuptiActivityCollector&) = delete;

  /// Opens the window: registers buffers, enables the record kinds, measures the clock offset.
  /// Throws ProfilerError without CUPTI, when another collector runs, or when CUPTI fails.
  void start();
  /// Marks the start of `step` now; records starting after it (until the next mark) carry it.
  void begin_step(std::int64_t step);
  /// Hands CUPTI's completed buffers to the sinks (forces CUPTI to complete open ones).
  void flush();
  /// Closes the window: flushes, disables the kinds, measures the clock offset again, emits.
  void stop();
  bool running() const;
  CuptiActivityStats stats() const;

 private:
  std::unique_ptr<CuptiActivityState> impl_;
};

/// The path of the libcupti this build loaded ("" without CUPTI): what NVTX_INJECTION64_PATH must
/// name, before the first NVTX call of the process, for NVTX ranges to reach CUPTI.
std::string cupti_library_path();

}  // namespace shardscope::profiler
