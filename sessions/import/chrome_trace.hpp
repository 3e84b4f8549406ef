#pragma once
// PyTorch profiler traces (the Chrome trace JSON that Kineto writes, one file per rank) read into
// a session's profiled window: GPU kernels (NCCL's included), memcpy and memset as activities,
// record_function / NVTX-style annotations as ranges, each on the Unix-epoch nanosecond timeline
// (baseTimeNanoseconds + ts). Streamed with a SAX parser: memory grows with the records kept, not
// with the size of the JSON, and time is linear in it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

struct ChromeTrace {
  std::optional<int> rank;            ///< distributedInfo.rank
  std::optional<int> world_size;      ///< distributedInfo.world_size
  std::string backend;                ///< distributedInfo.backend
  std::int64_t base_time_ns = 0;      ///< baseTimeNanoseconds (0 when absent: ts is already absolute)
  std::vector<ActivityRecord> activities;  ///< by start time
  std::vector<NvtxRange> ranges;           ///< by start time
  std::size_t skipped_events = 0;     ///< CPU ops, runtime calls, flows and metadata left out
};

struct ChromeTraceOptions {
  /// PyTorch numbers ProfilerStep#N from 0 at the first prof.step(); DeepSpeed's steps count
  /// from 1, so a record inside ProfilerStep#N belongs to step N + step_offset.
  std::int64_t step_offset = 1;
};

/// Parses one trace's JSON text; throws ImportError naming `file` and the byte of a JSON error,
/// or saying what is missing ("traceEvents").
ChromeTrace parse_chrome_trace(std::string_view json_text, const std::string& file,
                               const ChromeTraceOptions& options = {});
/// Reads (a .json or .json.gz is not supported: gunzip first) and parses one trace file.
ChromeTrace read_chrome_trace(const std::string& path, const ChromeTraceOptions& options = {});
/// The rank in a file name like "rank3.json", "worker_rank-3.pt.trace.json" or "trace_3.json"; nullopt if none.
std::optional<int> rank_from_trace_file_name(const std::string& path);

}  // namespace shardscope::sessions
