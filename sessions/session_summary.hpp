#pragma once
// One session in numbers: step time, throughput, MFU, memory, loss, skipped steps and the time
// spent in communication (docs/sessions.md, "Summary" gives each definition).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/session_reader.hpp"

namespace shardscope::sessions {

struct RankMemory {
  int rank = 0;
  std::optional<std::int64_t> peak_bytes;      ///< max of mem_peak (or mem_allocated when unset)
  std::optional<std::int64_t> reserved_bytes;  ///< max of mem_reserved
};

struct TimerStat {
  std::string name;
  double median_ms = 0;  ///< per step, slowest rank
  double p90_ms = 0;
  double total_s = 0;    ///< summed over steps (slowest rank)
};

struct CommOpStat {
  std::string op;
  std::int64_t count = 0;
  std::int64_t total_bytes = 0;
  double total_latency_s = 0;  ///< summed over every rank's records
  double mean_algbw_gbps = 0;
  double mean_busbw_gbps = 0;
};

struct SessionSummary {
  SessionInfo info;
  std::int64_t steps = 0;                  ///< distinct steps reported
  std::int64_t timed_steps = 0;            ///< steps counted in the timing statistics
  std::optional<double> median_step_ms;    ///< per step the slowest rank, then the median
  std::optional<double> p90_step_ms;
  std::optional<double> samples_per_s;     ///< per step the sum over ranks, then the median
  std::optional<double> tokens_per_s;
  std::optional<double> tflops_per_gpu;    ///< per step the mean over ranks, then the median
  std::optional<double> mfu;               ///< tflops_per_gpu / peak_tflops_per_gpu, when both known
  std::vector<RankMemory> memory;
  std::optional<double> final_loss;
  std::optional<std::int64_t> final_loss_step;
  std::optional<double> best_loss;
  std::optional<std::int64_t> best_loss_step;
  std::int64_t skipped_steps = 0;          ///< steps any rank skipped (overflow)
  std::optional<double> comm_time_s;       ///< the rank with the most collective time: its total
  std::optional<double> comm_fraction;     ///< that time over that rank's summed step time
  std::vector<TimerStat> timers;
  std::vector<CommOpStat> comm_ops;
  std::int64_t activity_records = 0;
  std::int64_t nvtx_ranges = 0;
  std::int64_t warning_logs = 0;
  std::int64_t error_logs = 0;
};

struct SummaryOptions {
  std::int64_t warmup_steps = 0;  ///< leave the first N steps out of timing and throughput (DeepSpeed skips 1-2)
};

/// Summarizes one session; throws StoreError(kNotFound) for an unknown id.
SessionSummary summarize_session(Store& store, std::int64_t session_id, const SummaryOptions& options = {});

/// The q-quantile (0..1) with linear interpolation between order statistics (NumPy's default).
/// Throws SessionsError(kInvalidArgument) for an empty input or q outside [0, 1].
double percentile(std::vector<double> values, double q);

}  // namespace shardscope::sessions
