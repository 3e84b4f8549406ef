#pragma once
// PyTorch profiler traces (the Chrome trace JSON that Kineto writes, one file per rank) read into
// a session's profiled window: GPU kernels (NCCL's included), memcpy and memset as activities,
// record_function / NVTX-style annotations as ranges, CPU operators (aten::*, autograd's backward
// functions) as CPU-side ranges of domain "cpu_op" with their input shapes, ids and forward/backward
// links, and the ProfilerStep#N windows as step times; each on the Unix-epoch nanosecond timeline
// (baseTimeNanoseconds + ts). Streamed from the file with a SAX parser in two passes (the step
// windows and flows first, then each record as its event closes, handed on in batches; the flow
// ends wait in a scratch SQLite file): what is held in memory is the step windows, a batch and
// fixed buffers, not anything that grows with the trace's records, and time is linear in its size.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

/// One CPU-side ProfilerStep#N window: the host's wall time of one step, prof.step() to prof.step().
struct ProfilerStepWindow {
  std::int64_t step = 0;  ///< N + ChromeTraceOptions::step_offset
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

/// Longer "Input Dims" texts (an op over hundreds of tensors) are cut here and end in "...".
inline constexpr std::size_t kMaxShapesChars = 4096;

struct ChromeTrace {
  std::optional<int> rank;            ///< distributedInfo.rank
  std::optional<int> world_size;      ///< distributedInfo.world_size
  std::string backend;                ///< distributedInfo.backend
  std::int64_t base_time_ns = 0;      ///< baseTimeNanoseconds (0 when absent: ts is already absolute)
  std::vector<ActivityRecord> activities;  ///< by start time
  std::vector<NvtxRange> ranges;           ///< annotations and CPU operators, by start time (a parent first)
  std::vector<ProfilerStepWindow> step_windows;  ///< the CPU's ProfilerStep#N windows, by start time
  std::size_t cpu_ops = 0;            ///< ranges of domain kCpuOpDomain
  std::size_t forward_backward_links = 0;  ///< backward ops given their forward op (fwdbwd flows)
  std::size_t skipped_events = 0;     ///< runtime calls, python functions, other flows and metadata left out
};

struct ChromeTraceOptions {
  /// PyTorch numbers ProfilerStep#N from 0 at the first prof.step(); DeepSpeed's steps count
  /// from 1, so a record inside ProfilerStep#N belongs to step N + step_offset.
  std::int64_t step_offset = 1;
};

/// A backward CPU operator (found by its thread, times and external id) and the external id of
/// the forward operator autograd ran it for: the trace's fwdbwd flow, known once the whole trace
/// was read, so a streamed range gets it afterwards (ChromeTraceSink::links).
struct ForwardLink {
  std::int64_t stream = 0, start_ns = 0, end_ns = 0;
  std::optional<std::int64_t> external_id;  ///< the backward operator's own
  std::int64_t forward_op_id = 0;
};

/// Where a streamed trace's records go, in batches of at most `batch_records`, in file order.
struct ChromeTraceSink {
  /// Called once the first pass has read the whole file, before any record: the trace's rank,
  /// world size and base time (ChromeTrace without records). May throw to stop the reading.
  std::function<void(const ChromeTrace&)> indexed;
  std::function<void(std::vector<ActivityRecord>&)> activities;
  std::function<void(std::vector<NvtxRange>&)> ranges;
  /// After the last record: the forward/backward links to set on the ranges handed over, in
  /// batches (of batch_records) in the order of the flows' ids; may be left unset.
  std::function<void(std::vector<ForwardLink>&)> links;
  /// Bytes of this file read so far in this pass, the file's size, and the pass (1 or 2); called
  /// each time a buffer (1 MiB) is read.
  std::function<void(std::uint64_t bytes, std::uint64_t size, int pass)> progress;
  std::size_t batch_records = 10000;
};

/// The streamed reading of one trace file: everything of ChromeTrace but its records and links,
/// which went to the sink.
struct StreamedChromeTrace {
  ChromeTrace trace;  ///< activities and ranges empty; the counts below (and forward_backward_links) say how many went
  std::size_t activities = 0, ranges = 0;
};

/// Reads `path` in two streamed passes (memory bounded by the trace's steps, not its size), handing
/// its records and then its links to `sink`; throws ImportError as parse_chrome_trace does.
StreamedChromeTrace stream_chrome_trace(const std::string& path, const ChromeTraceSink& sink,
                                        const ChromeTraceOptions& options = {});
/// Sets forward_op_id on the ranges the links name (the in-memory form of a trace).
void apply_forward_links(std::vector<NvtxRange>& ranges, const std::vector<ForwardLink>& links);
/// Parses one trace's JSON text; throws ImportError naming `file` and the byte of a JSON error,
/// or saying what is missing ("traceEvents").
ChromeTrace parse_chrome_trace(std::string_view json_text, const std::string& file,
                               const ChromeTraceOptions& options = {});
/// Reads (a .json or .json.gz is not supported: gunzip first) and parses one trace file into
/// memory: its records sorted by start (a range before the ranges it encloses).
ChromeTrace read_chrome_trace(const std::string& path, const ChromeTraceOptions& options = {});
/// The rank in a file name like "rank3.json", "worker_rank-3.pt.trace.json" or "trace_3.json"; nullopt if none.
std::optional<int> rank_from_trace_file_name(const std::string& path);

}  // namespace shardscope::sessions
