#include "sessions/regression_trend.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "sessions/errors.hpp"
#include "sessions/regression_samples.hpp"

namespace shardscope::sessions {
namespace {

std::string local_date(std::optional<double> unix_seconds) {
  if (!unix_seconds) return "(no start time)";
  const std::time_t t = static_cast<std::time_t>(*unix_seconds);
  std::tm local{};
  localtime_r(&t, &local);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &local);
  return text;
}

std::vector<std::string> keys_of(const SessionInfo& s, TrendGrouping grouping) {
  switch (grouping) {
    case TrendGrouping::kSession: return {"#" + std::to_string(s.id) + " " + s.name};
    case TrendGrouping::kVersion: {
      const std::string v = s.shardscope_version.empty() ? "(unknown version)" : s.shardscope_version;
      return {s.git_hash.empty() ? v : v + " (" + s.git_hash + ")"};
    }
    case TrendGrouping::kTag: return s.tags.empty() ? std::vector<std::string>{"(untagged)"} : s.tags;
    case TrendGrouping::kDate: return {local_date(s.started_at)};
  }
  return {};
}

// One run's samples of the metric; the loss is its last 10 % of steps (where runs are compared).
RunSamples samples_for(const RunMetrics& r, const std::string& metric) {
  const auto it = r.series.find(metric);
  if (it == r.series.end()) return {};
  RunSamples all = values_of(it->second);
  if (metric != "loss") return all;
  const std::size_t keep = std::max<std::size_t>(1, all.size() / 10);
  return RunSamples(all.end() - static_cast<std::ptrdiff_t>(keep), all.end());
}

struct Pending {
  TrendGroup group;
  RunGroup runs;
};

}  // namespace

const char* trend_grouping_name(TrendGrouping g) {
  switch (g) {
    case TrendGrouping::kSession: return "session";
    case TrendGrouping::kVersion: return "version";
    case TrendGrouping::kTag: return "tag";
    case TrendGrouping::kDate: return "date";
  }
  return "?";
}

TrendGrouping trend_grouping_from_name(const std::string& name) {
  for (auto g : {TrendGrouping::kSession, TrendGrouping::kVersion, TrendGrouping::kTag, TrendGrouping::kDate})
    if (name == trend_grouping_name(g)) return g;
  throw SessionsError(ErrorKind::kInvalidArgument, "--by '" + name + "': use version, tag, date or session");
}

namespace {

// The sessions with enough samples of the metric, by group key, oldest group first.
std::vector<Pending> collect_groups(Store& store, const std::string& metric, const TrendOptions& options, TrendReport& report) {
  auto sessions = list_sessions(store, options.filter);
  std::reverse(sessions.begin(), sessions.end());  // oldest first
  std::map<std::string, Pending> by_key;
  const std::size_t need = metric_kind(metric).statistic == RunStatistic::kMax ? 1 : options.min_samples;
  for (const auto& s : sessions) {
    const RunMetrics r = load_run_metrics(store, s.id, options.warmup_steps);
    RunSamples samples = samples_for(r, metric);
    if (metric == "throughput" && !r.throughput_unit.empty()) report.unit = r.throughput_unit;
    if (samples.size() < need) {
      report.notes.push_back("#" + std::to_string(s.id) + " '" + s.name + "': " + std::to_string(samples.size()) +
                             " samples of " + metric + " (needs " + std::to_string(need) + "); left out");
      continue;
    }
    for (const auto& key : keys_of(s, options.grouping)) {
      Pending& p = by_key[key];
      if (p.group.session_ids.empty()) p.group.key = key, p.group.started_at = s.started_at.value_or(0);
      p.group.session_ids.push_back(s.id);
      p.runs.push_back(samples);
    }
  }
  std::vector<Pending> ordered;
  for (auto& [key, p] : by_key) ordered.push_back(std::move(p));
  std::stable_sort(ordered.begin(), ordered.end(), [](const Pending& x, const Pending& y) {
    return x.group.started_at != y.group.started_at ? x.group.started_at < y.group.started_at
                                                    : x.group.session_ids.front() < y.group.session_ids.front();
  });
  return ordered;
}

}  // namespace

TrendReport metric_trend(Store& store, const std::string& metric, const TrendOptions& options) {
  const MetricKind kind = metric_kind(metric);
  TrendReport report{metric, kind.unit, metric == "loss" ? "mean of the last 10 % of steps" : kind.statistic_text,
                     kind.higher_is_worse, options.grouping, options.threshold.value_or(threshold_for(metric, {})), {}, {}};
  std::vector<Pending> ordered = collect_groups(store, metric, options, report);
  if (ordered.empty()) throw SessionsError(ErrorKind::kInvalidArgument, "no session in the store has enough samples of " + metric);
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    TrendGroup& g = ordered[i].group;
    g.value = group_interval(ordered[i].runs, kind.statistic, options.bootstrap);
    if (i > 0 && ordered[i - 1].group.value.estimate != 0) {
      TrendStep step;
      step.change = relative_change(ordered[i - 1].runs, ordered[i].runs, kind.statistic, options.bootstrap);
      step.verdict = decide(step.change, report.threshold, kind.higher_is_worse);
      g.from_previous = step;
    }
    report.groups.push_back(g);  // a copy: the next group reads this one's value
  }
  return report;
}

}  // namespace shardscope::sessions
