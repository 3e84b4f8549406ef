#pragma once
// The second half of chrome_trace.cpp's one pass (internal to it): each trace event, as the SAX
// parser closes it, becomes an activity, a range, a step window or a flow end, or is counted as
// skipped; finish() then puts everything on the epoch timeline, links backward operators to their
// forward ones and labels steps. Nothing of a skipped event is kept.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sessions/import/chrome_trace.hpp"

namespace shardscope::sessions {

/// One trace event reduced to the fields used here, as the SAX pass sees them.
struct RawTraceEvent {
  std::string ph, cat, name;
  double ts_us = std::numeric_limits<double>::quiet_NaN(), dur_us = 0;  ///< NaN: no "ts" (skipped)
  std::int64_t tid = 0;
  std::optional<std::int64_t> id;  ///< a flow's id
  std::optional<std::int64_t> device, stream, correlation, bytes, registers;
  std::optional<std::int64_t> external_id, sequence_number, forward_thread_id;
  std::optional<double> bandwidth_gbps;
  std::vector<std::int64_t> grid, block;
  std::string input_dims;  ///< "Input Dims" as compact JSON, cut at kMaxShapesChars
};

class ChromeTraceBuilder {
 public:
  ChromeTraceBuilder(ChromeTrace& out, const ChromeTraceOptions& options) : out_(out), options_(options) {}
  /// Converts one event (times relative to the base time, which may come later in the file).
  void add(const RawTraceEvent& e);
  /// Adds the base time, links fwdbwd flows, assigns steps and sorts; call once after the last add.
  void finish();

 private:
  struct StepWindow {
    std::int64_t start_ns, end_ns, step;
  };
  struct FlowEnd {
    std::int64_t id, tid, ts_ns;
    bool start;  ///< "s" (at the forward op) or "f" (at the backward op)
  };
  void add_activity(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void add_range(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void shift_to_epoch();
  void link_forward_backward();
  void assign_steps();

  ChromeTrace& out_;
  const ChromeTraceOptions& options_;
  std::vector<StepWindow> cpu_steps_, gpu_steps_;
  std::vector<FlowEnd> flows_;
};

}  // namespace shardscope::sessions
