#pragma once
// The events a run reports, as plain structs: what ranks hand to an EventSink, what travels on the
// wire (event_codec.hpp) and what the store keeps. docs/sessions.md documents every field, its
// unit and its wire encoding; this header is the source of truth for the names.

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <variant>
#include <vector>

#include "sessions/environment_report.hpp"

namespace shardscope::sessions {

/// Version of the wire protocol; a collector refuses a Hello carrying another version. Version 3
/// added the challenge-response handshake (Challenge, Hello with a proof, Welcome) and HostReport.
inline constexpr std::uint16_t kProtocolVersion = 3;

/// Where one rank runs: what the launcher knows when it spawns it.
struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string device;  ///< "cuda:0", "cpu"
};

/// Sent once per session (by the launcher, or rank 0 when there is none).
struct RunStart {
  std::string name;                       ///< human name; defaults to the config file's stem
  double started_at = 0;                  ///< Unix time, seconds
  std::vector<std::string> command_line;  ///< argv of the run, as launched
  std::string config_json;                ///< the resolved DeepSpeed-style config, JSON text
  std::string config_hash;                ///< stable hash of the resolved config (for grouping)
  EnvironmentReport environment;          ///< versions, GPUs, host of the launching node
  int world_size = 0;
  std::vector<RankInfo> ranks;
  double peak_tflops_per_gpu = 0;         ///< dense peak of one device; 0 = unknown (no MFU)
  std::vector<std::string> tags;          ///< free labels, as W&B and MLflow tags
  /// Variables the launcher gave every rank (NCCL*, PYTHON*, UCX*, ...; protocol 3); a name that
  /// looks like a credential carries kRedactedValue (sessions/credentials.hpp), never its value.
  std::vector<std::pair<std::string, std::string>> environment_variables;
};

/// One optimizer step seen from one rank. Unset optionals are "not measured", never zero.
struct StepMetrics {
  int rank = 0;
  std::int64_t step = 0;
  double wall_time = 0;                 ///< Unix time at the end of the step, seconds
  std::optional<double> step_time_ms;   ///< wall time of the whole step on this rank
  std::optional<double> loss;
  std::optional<double> lr;
  std::optional<double> loss_scale;
  std::optional<double> grad_norm;
  bool skipped = false;                 ///< overflow: the optimizer step was skipped
  std::optional<double> samples_per_s;  ///< this rank's share of the throughput
  std::optional<double> tokens_per_s;   ///< this rank's share of the throughput
  std::optional<double> tflops;         ///< achieved model TFLOP/s on this rank
  std::optional<std::int64_t> mem_allocated_bytes;
  std::optional<std::int64_t> mem_reserved_bytes;
  std::optional<std::int64_t> mem_peak_bytes;
};

struct TimerValue {
  std::string name;  ///< "forward", "backward", "allreduce", "step", or any named timer
  double ms = 0;
};

/// The named timers of one step on one rank.
struct TimerBreakdown {
  int rank = 0;
  std::int64_t step = 0;
  std::vector<TimerValue> timers;
};

/// One timed collective (nccl-tests' definitions of algbw and busbw).
struct CommRecord {
  int rank = 0;
  std::int64_t step = 0;
  std::string op;  ///< "all_reduce", "reduce_scatter", "all_gather", "broadcast", ...
  std::int64_t bytes = 0;
  double latency_us = 0;
  double algbw_gbps = 0;  ///< bytes / latency, GB/s
  double busbw_gbps = 0;  ///< algbw scaled by the op's bus factor, GB/s
  int group_size = 0;
};

enum class ActivityKind { kKernel = 0, kMemcpy = 1, kMemset = 2 };

/// A CUDA launch dimension (gridDim or blockDim).
struct Dim3 {
  int x = 1, y = 1, z = 1;
  bool operator==(const Dim3& o) const { return x == o.x && y == o.y && z == o.z; }
};

/// One GPU activity of the profiled window (a CUPTI activity record, reduced).
struct ActivityRecord {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;         ///< kernel name (demangled), or "HtoD"/"DtoH"/"DtoD"/.../"memset"
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int device = 0;
  std::int64_t stream = 0;
  std::int64_t bytes = 0;   ///< memcpy/memset size; 0 for kernels
  std::int64_t step = -1;   ///< the step it belongs to, -1 when unknown
  // Details (protocol 2, schema 3); unset when the recorder did not provide them.
  std::optional<Dim3> grid = std::nullopt;                   ///< kernels
  std::optional<Dim3> block = std::nullopt;                  ///< kernels
  std::optional<int> registers_per_thread = std::nullopt;    ///< kernels
  std::optional<std::int64_t> correlation_id = std::nullopt; ///< CUPTI's link to the launching API call
  std::optional<double> throughput_gbps = std::nullopt;      ///< memcpy/memset: bytes / duration, GB/s
};

/// A batch of activities of one rank; the profiler flushes its CUPTI buffers as batches.
struct ActivityBatch {
  int rank = 0;
  std::vector<ActivityRecord> records;
};

struct NvtxRange {
  std::string name;
  std::string domain;  ///< NVTX domain, empty for the default one
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int device = -1;          ///< -1 for a CPU-side range
  std::int64_t stream = 0;  ///< or the thread id for CPU-side ranges
  std::int64_t step = -1;
  // A CPU operator of a PyTorch profiler trace (domain kCpuOpDomain; schema 9, NvtxBatch's detail
  // block): what Kineto recorded of it. Unset (empty) for other ranges.
  std::string shapes = {};  ///< "Input Dims" as compact JSON, "[[8,16],[32,16],[32]]"; "" = not recorded
  std::optional<std::int64_t> external_id = std::nullopt;        ///< Kineto's "External id" (unique in a trace)
  std::optional<std::int64_t> sequence_number = std::nullopt;    ///< autograd's; a backward op carries its forward op's
  std::optional<std::int64_t> forward_thread_id = std::nullopt;  ///< "Fwd thread id"
  /// A backward op: the external_id of the forward op it is the gradient of (Kineto's "fwdbwd" flow).
  std::optional<std::int64_t> forward_op_id = std::nullopt;
  bool has_op_details() const {
    return !shapes.empty() || external_id || sequence_number || forward_thread_id || forward_op_id;
  }
};

/// The domain of the ranges that are CPU operators (aten::*, autograd's backward functions) of a
/// PyTorch profiler trace, Kineto's category "cpu_op".
inline constexpr const char* kCpuOpDomain = "cpu_op";

struct NvtxBatch {
  int rank = 0;
  std::vector<NvtxRange> ranges;
};

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

struct LogLine {
  int rank = 0;
  double time = 0;  ///< Unix time, seconds
  LogLevel level = LogLevel::kInfo;
  std::string text;
};

struct RankExit {
  int rank = 0;
  int exit_code = 0;  ///< negative: killed by that signal
};

/// Sent once at the end (by the launcher, or rank 0 when there is none).
struct RunEnd {
  std::string status;  ///< "completed", "failed", "interrupted"
  double ended_at = 0; ///< Unix time, seconds
  double wall_time_s = 0;
  std::vector<RankExit> exit_codes;
};

/// One value of a named scalar series at one step: what a run reports that has no StepMetrics field
/// (DeepSpeed's eval_loss and eigenvalues, the flops profiler's figures, a script's own scalars).
struct SeriesPoint {
  int rank = 0;
  std::int64_t step = 0;
  std::string name;  ///< e.g. "Train/Samples/eval_loss", "flops_profiler/fwd_flops_per_gpu"
  double value = 0;
};

/// One row of an aggregate communication table, as DeepSpeed's comms_logger log_summary prints it:
/// every collective of one op and message size over the whole run.
struct CommSummary {
  int rank = 0;
  std::string op;                 ///< "all_reduce", "all_gather_into_tensor", ...
  std::int64_t message_bytes = 0; ///< the size of one message
  std::int64_t count = 0;
  double total_latency_ms = 0;
  double avg_latency_ms = 0;      ///< DeepSpeed's trimmed mean (10 % cut at each end)
  double algbw_gbps = 0;          ///< DeepSpeed's tput_avg, Gbps (bits)
  double busbw_gbps = 0;          ///< DeepSpeed's busbw_avg, Gbps (bits)
};

/// Where a session came from when ShardScope's engine did not record it: "deepspeed-import" (files
/// of a finished DeepSpeed run) or "deepspeed-watch" (a DeepSpeed command followed live).
struct SessionOrigin {
  std::string kind;
  std::string details_json;  ///< what was read: files, folders, the command; a JSON object
};

/// One host of a run, sent by a launcher (protocol 3): its clock against the collector's, and the
/// ranks and exit codes a RunStart/RunEnd of another node's launcher could not list (--no_ssh).
struct HostReport {
  std::string host;                          ///< the name the run knows it by (hostfile entry)
  int node_rank = 0;
  std::optional<double> clock_offset_s;      ///< this host's clock minus the collector host's clock
  std::optional<double> clock_uncertainty_s; ///< half the round trip of the probe it came from
  std::string shardscope_version;
  std::string git_hash;
  std::vector<RankInfo> ranks;
  std::vector<RankExit> exit_codes;
};

/// One collective of one rank, from the rank's flight record (engine/collective_flight_record.hpp):
/// sent when the rank enters it and again when it leaves it (left_at set then), so a collector
/// knows live which ranks wait in which collective. Frame 16, added within protocol 3 (an older
/// collector refuses the frame type; a newer one reads every older frame).
struct CollectiveMark {
  int rank = 0;
  std::string group = "world";   ///< the process group's name
  std::vector<int> group_ranks;  ///< the group's members; empty = every rank of the run
  std::int64_t sequence = 0;     ///< this rank's number for it in its group (the same on every rank)
  std::string op;                ///< "all_reduce", "reduce_scatter", "all_gather", "broadcast"
  std::int64_t bytes = 0;
  std::string dtype;             ///< "float32", "bfloat16", ...
  std::int64_t step = 0;         ///< the optimizer step being worked on (1 = the first)
  std::string phase;             ///< "forward", "backward", "optimizer", "data", "checkpoint", "setup"
  std::string tag;               ///< what the engine used it for ("grad bucket 3")
  double entered_at = 0;         ///< Unix seconds when the rank issued it
  std::optional<double> left_at; ///< Unix seconds when its wait returned; unset while waiting
};

/// What the run doctor (diagnosis/) concluded: a hang, a straggler, a numerics or memory fault.
/// Frame 17, sent by a launcher (rank -1); also written after the fact by `sessions diagnose`.
struct Finding {
  std::string kind;            ///< "hang", "straggler", "nan_loss", "overflow_streak", "loss_spike", ...
  std::string severity;        ///< "error", "warning", "info"
  std::int64_t first_step = -1;///< the step range it covers; -1 = unknown
  std::int64_t last_step = -1;
  std::vector<int> ranks;      ///< the rank(s) it names as the cause
  std::string summary;         ///< one line, with host:rank where known
  std::string evidence;        ///< what it rests on, one fact a line
  std::string suggested_fix;
  double found_at = 0;         ///< Unix seconds
};

using Event = std::variant<RunStart, StepMetrics, TimerBreakdown, CommRecord, ActivityBatch, NvtxBatch,
                           LogLine, RunEnd, SeriesPoint, CommSummary, SessionOrigin, HostReport, CollectiveMark,
                           Finding>;

/// How many records an event carries (a batch of 1,000 kernels counts 1,000); for rates.
std::size_t event_record_count(const Event& event);

/// A stable 16-hex-digit hash of a resolved config (FNV-1a 64 of the key-sorted compact JSON), so
/// the same settings written in another key order or spacing hash alike. Throws
/// SessionsError(kInvalidArgument) when `config_json` is not JSON.
std::string compute_config_hash(const std::string& config_json);

/// "debug", "info", "warning", "error".
const char* log_level_name(LogLevel level);
/// Inverse of log_level_name; throws SessionsError(kInvalidArgument) naming the bad text.
LogLevel log_level_from_name(const std::string& name);
/// "kernel", "memcpy", "memset".
const char* activity_kind_name(ActivityKind kind);

}  // namespace shardscope::sessions
