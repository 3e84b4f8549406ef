#pragma once
// The per-step samples a regression check or trend compares, read from one session: step time and
// throughput after warm-up, each timer, time in each collective per step, MFU, memory and loss.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sessions/regression_stats.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::sessions {

class Store;

/// How a metric is compared.
struct MetricKind {
  std::string unit;
  RunStatistic statistic = RunStatistic::kMedian;
  bool higher_is_worse = true;
  const char* statistic_text = "median per step after warm-up";
};

/// One session's samples by metric name ("step_time", "throughput", "mfu", "phase:forward",
/// "comm:all_reduce", "peak_memory", "reserved_memory", "loss"), each in step order.
struct RunMetrics {
  SessionDetail detail;
  std::int64_t warmup_steps = 0;      ///< leading steps left out of timings
  std::string throughput_unit;        ///< "tokens/s", "samples/s", or "" when neither was reported
  std::map<std::string, std::vector<CurvePoint>> series;
};

/// The warm-up used when none is asked for: max(2, 10 % of the run's steps), so the allocator's
/// first growth, autotuning and cold caches do not count as the run's speed.
std::int64_t default_warmup_steps(std::size_t steps);

/// Reads every metric of one session. Timings, throughput, MFU and loss keep the steps after
/// warm-up; memory keeps every step (a peak in warm-up is still the run's peak).
RunMetrics load_run_metrics(Store& store, std::int64_t session_id, std::optional<std::int64_t> warmup_steps);

/// Unit, statistic and direction of a metric name (phase:* and comm:* by prefix). Throws
/// SessionsError(kInvalidArgument) naming the valid metrics for an unknown one.
MetricKind metric_kind(const std::string& metric);

/// The values of `points`.
RunSamples values_of(const std::vector<CurvePoint>& points);

}  // namespace shardscope::sessions
