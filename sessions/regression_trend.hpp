#pragma once
// A metric over many sessions (issue 30, item 5): per group (a session, a ShardScope version, a
// tag or a day) its value with a 95 % interval, and where it stepped: consecutive groups whose
// change is a regression or an improvement by the rule of regression_check.hpp.
// `shardscope sessions trend` prints it; the GUI charts the same struct.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/regression_check.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::sessions {

class Store;

enum class TrendGrouping { kSession, kVersion, kTag, kDate };

/// "session", "version", "tag", "date"; and back (throws SessionsError(kInvalidArgument)).
const char* trend_grouping_name(TrendGrouping grouping);
TrendGrouping trend_grouping_from_name(const std::string& name);

struct TrendOptions {
  TrendGrouping grouping = TrendGrouping::kSession;
  SessionFilter filter;                      ///< which sessions take part (list_sessions' filters)
  std::optional<std::int64_t> warmup_steps;  ///< as CheckOptions
  std::optional<double> threshold;           ///< for the steps; default: the metric's default threshold
  BootstrapOptions bootstrap;
  std::size_t min_samples = 5;
};

/// A change between one group and the one before it.
struct TrendStep {
  Interval change;  ///< relative, fractions
  Verdict verdict = Verdict::kWithinNoise;
};

struct TrendGroup {
  std::string key;  ///< "#12 name", "0.3.1 (abc1234)", a tag, "2026-11-29"
  std::vector<std::int64_t> session_ids;  ///< oldest first
  double started_at = 0;                  ///< the group's oldest session
  Interval value;                         ///< in the metric's unit
  std::optional<TrendStep> from_previous; ///< unset for the first group
};

struct TrendReport {
  std::string metric;
  std::string unit;
  std::string statistic;
  bool higher_is_worse = true;
  TrendGrouping grouping = TrendGrouping::kSession;
  double threshold = 0;
  std::vector<TrendGroup> groups;  ///< oldest first
  std::vector<std::string> notes;  ///< sessions left out and why
};

/// The metric's trend over the sessions `options.filter` selects. The loss of a run is the mean of
/// its last 10 % of steps. Throws SessionsError(kInvalidArgument) for an unknown metric or when no
/// session has the metric.
TrendReport metric_trend(Store& store, const std::string& metric, const TrendOptions& options = {});

}  // namespace shardscope::sessions
