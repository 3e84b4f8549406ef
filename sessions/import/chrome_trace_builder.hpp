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

/// Two passes over one trace: the first (index) keeps only the step windows and the fwdbwd flow
/// ends, which say what step a record belongs to and which backward operator links to which
/// forward one; the second (emit) converts each event as it closes, on the epoch timeline with its
/// step, and hands the records to the sink in batches. What a pass keeps is bounded by the trace's
/// steps and flows, never by its records (docs/sessions.md, "Traces at scale").
class ChromeTraceBuilder {
 public:
  ChromeTraceBuilder(ChromeTrace& out, const ChromeTraceOptions& options) : out_(out), options_(options) {}
  /// Takes one event (times relative to the base time, which may come later in the file).
  void add(const RawTraceEvent& e);
  /// Ends the index pass: windows and flows go on the epoch timeline (out.base_time_ns); the next
  /// add() calls are the emit pass, whose records go to `sink`.
  void start_emitting(const ChromeTraceSink& sink);
  /// Ends the emit pass: hands over the last records and returns the forward/backward links found.
  std::vector<ForwardLink> finish();

 private:
  struct StepWindow {
    std::int64_t start_ns, end_ns, step;
  };
  // A flow end and the innermost CPU operator of its thread seen so far that encloses its time.
  struct FlowEnd {
    std::int64_t id, tid, ts_ns;
    bool start;  ///< "s" (at the forward op) or "f" (at the backward op)
    bool bound = false;
    std::int64_t op_start = 0, op_end = 0;
    std::optional<std::int64_t> op_external_id;
  };
  void index(const RawTraceEvent& e);
  void add_activity(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void add_range(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void bind_flows(const NvtxRange& op);
  void hand_over(bool all);

  ChromeTrace& out_;
  const ChromeTraceOptions& options_;
  const ChromeTraceSink* sink_ = nullptr;  ///< set: the emit pass
  std::vector<StepWindow> cpu_steps_, gpu_steps_;
  std::vector<FlowEnd> flows_;  ///< by (tid, ts) once emitting
};

}  // namespace shardscope::sessions
