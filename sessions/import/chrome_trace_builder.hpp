#pragma once
// The second half of chrome_trace.cpp's passes (internal to it): each trace event, as the SAX
// parser closes it, becomes an activity, a range, a step window or a flow end, or is counted as
// skipped; finish() then hands over the links of backward operators to their forward ones. Nothing
// of a skipped event is kept, and the flow ends (as many as the trace's operators) are kept on disk.

#include <cstdint>
#include <limits>
#include <memory>
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

class FlowEndTable;

/// Two passes over one trace: the first (index) keeps the step windows in memory and writes the
/// fwdbwd flow ends to a scratch SQLite file, which say what step a record belongs to and which
/// backward operator links to which forward one; the second (emit) converts each event as it
/// closes, on the epoch timeline with its step, binds the flow ends it encloses, and hands the
/// records to the sink in batches. What is held in memory is bounded by the trace's steps (24 bytes
/// each), never by its records or flows (docs/sessions.md, "Traces at scale").
class ChromeTraceBuilder {
 public:
  ChromeTraceBuilder(ChromeTrace& out, const ChromeTraceOptions& options);
  ~ChromeTraceBuilder();
  /// Takes one event (times relative to the base time, which may come later in the file).
  void add(const RawTraceEvent& e);
  /// Ends the index pass: the step windows go on the epoch timeline (out.base_time_ns); the next
  /// add() calls are the emit pass, whose records go to `sink`.
  void start_emitting(const ChromeTraceSink& sink);
  /// Ends the emit pass: hands over the last records, then the forward/backward links found (to
  /// the sink's `links`, in batches).
  void finish();

 private:
  struct StepWindow {
    std::int64_t start_ns, end_ns, step;
  };
  void index(const RawTraceEvent& e);
  void add_activity(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void add_range(const RawTraceEvent& e, std::int64_t start, std::int64_t end);
  void hand_over(bool all);

  ChromeTrace& out_;
  const ChromeTraceOptions& options_;
  const ChromeTraceSink* sink_ = nullptr;  ///< set: the emit pass
  std::vector<StepWindow> cpu_steps_, gpu_steps_;
  std::unique_ptr<FlowEndTable> flows_;
};

}  // namespace shardscope::sessions
