#pragma once
// DeepSpeed's comms logger (utils/comms_logging.py): every timed collective is recorded per op
// name and message size with its latency, algbw and busbw; the summary is deepspeed.comm's
// log_summary(): per op, rows sorted by message size, with count, total latency and 10 %-trimmed
// means of latency, algbw and busbw.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/comm_bandwidth.hpp"

namespace shardscope::profiler {

struct CommsLoggerOptions {
  bool enabled = false;
  bool verbose = false;                ///< print each op as it is recorded
  bool prof_all = true;                ///< record every op, not only prof_ops
  bool debug = false;                  ///< append "| [Caller Func: fn]" to the record name
  std::vector<std::string> prof_ops;   ///< ops recorded when prof_all is false
};

struct CommSizeSummary {
  std::uint64_t message_bytes = 0;
  std::int64_t count = 0;
  double total_latency_ms = 0;
  double avg_latency_ms = 0;  ///< trimmed mean (10 % off each end), as DeepSpeed
  double algbw_gbps = 0;      ///< trimmed mean
  double busbw_gbps = 0;      ///< trimmed mean
};

struct CommOpSummary {
  std::string name;                    ///< the record name (op, plus the caller under debug)
  std::vector<CommSizeSummary> sizes;  ///< sorted by message size
};

class CommsLogger {
 public:
  explicit CommsLogger(CommsLoggerOptions options) : options_(std::move(options)) {}

  /// Whether an op with this name is recorded (enabled, and prof_all or listed in prof_ops).
  bool should_record(const std::string& op) const;
  /// Records one collective; returns the verbose line DeepSpeed prints ("" when not verbose or
  /// not recorded). Throws std::invalid_argument for an op name DeepSpeed does not know.
  std::string record(const std::string& op, std::uint64_t message_bytes, int world_size, double latency_ms,
                     const std::string& caller = "");

  /// Per op and size, as log_summary() computes it; ops in name order.
  std::vector<CommOpSummary> summary() const;
  /// log_summary()'s table.
  std::string format_summary() const;
  bool has_data() const { return !records_.empty(); }
  void reset_data() { records_.clear(); }

 private:
  struct Samples {
    std::vector<double> latency_ms, algbw, busbw;
  };
  CommsLoggerOptions options_;
  std::map<std::string, std::map<std::uint64_t, Samples>> records_;
};

/// scipy.stats.trim_mean(values, proportion): drops int(proportion * n) values at each end of the
/// sorted values and averages the rest. Throws std::invalid_argument for an empty input.
double trimmed_mean(std::vector<double> values, double proportion);

/// DeepSpeed's convert_size: 1536 -> "1.5 KB" (binary steps, names B, KB, MB, GB, ...).
std::string convert_size(std::uint64_t bytes);

}  // namespace shardscope::profiler
