#include "sessions/regression_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>

#include "sessions/errors.hpp"
#include "sessions/regression_internal.hpp"
#include "sessions/regression_samples.hpp"

namespace shardscope::sessions {
namespace {

using Runs = std::vector<RunMetrics>;

std::string label(const RunMetrics& r) {
  return "#" + std::to_string(r.detail.info.id) + " '" + r.detail.info.name + "'";
}

void require_usable_ids(const std::vector<std::int64_t>& baseline, const std::vector<std::int64_t>& candidate) {
  if (baseline.empty() || candidate.empty())
    throw SessionsError(ErrorKind::kInvalidArgument, "a regression check needs at least one baseline and one candidate session");
  std::set<std::int64_t> seen;
  for (const auto* group : {&baseline, &candidate})
    for (auto id : *group)
      if (!seen.insert(id).second)
        throw SessionsError(ErrorKind::kInvalidArgument,
                            "session " + std::to_string(id) + " is named twice (a session is either a baseline or a candidate, once)");
}

// Metrics every session has, in report order: end to end first, then what explains it.
std::vector<std::string> shared_metrics(const Runs& all, std::vector<std::string>& notes) {
  std::map<std::string, std::size_t> count;
  for (const auto& r : all)
    for (const auto& [name, points] : r.series) ++count[name];
  std::vector<std::string> order = {"step_time", "throughput", "mfu"}, out;
  for (const auto& [name, n] : count)
    if (name.rfind("phase:", 0) == 0 || name.rfind("comm:", 0) == 0) order.push_back(name);
  for (const char* tail : {"peak_memory", "reserved_memory", "loss"}) order.push_back(tail);
  for (const auto& name : order) {
    const auto it = count.find(name);
    if (it == count.end()) continue;
    if (it->second == all.size()) out.push_back(name);
    else notes.push_back(name + ": recorded by " + std::to_string(it->second) + " of " + std::to_string(all.size()) + " sessions; left out");
  }
  return out;
}

RunGroup samples_of(const Runs& runs, const std::string& metric) {
  RunGroup out;
  for (const auto& r : runs) out.push_back(values_of(r.series.at(metric)));
  return out;
}

// Loss curves on the steps every session reported (after warm-up), for the paired comparison.
std::pair<RunGroup, RunGroup> aligned_loss(const Runs& a, const Runs& b) {
  std::set<std::int64_t> shared;
  bool first = true;
  for (const auto* g : {&a, &b})
    for (const auto& r : *g) {
      std::set<std::int64_t> steps;
      for (const auto& p : r.series.at("loss")) steps.insert(p.step);
      if (first) shared = steps, first = false;
      else {
        std::set<std::int64_t> keep;
        std::set_intersection(shared.begin(), shared.end(), steps.begin(), steps.end(), std::inserter(keep, keep.end()));
        shared.swap(keep);
      }
    }
  const auto curves = [&shared](const Runs& g) {
    RunGroup out;
    for (const auto& r : g) {
      out.emplace_back();
      for (const auto& p : r.series.at("loss"))
        if (shared.count(p.step)) out.back().push_back(p.value);
    }
    return out;
  };
  return {curves(a), curves(b)};
}

std::size_t total_size(const RunGroup& g) {
  std::size_t n = 0;
  for (const auto& r : g) n += r.size();
  return n;
}

void fill_dependence(const RunGroup& a, const RunGroup& b, MetricVerdict& v) {
  v.baseline_samples = total_size(a), v.candidate_samples = total_size(b);
  for (const auto* g : {&a, &b})
    for (const auto& run : *g) {
      const SeriesDependence d = series_dependence(run);
      (g == &a ? v.baseline_effective : v.candidate_effective) += d.effective_samples;
      v.block_length = std::max(v.block_length, d.block_length);
    }
}

double group_mean(const RunGroup& g, RunStatistic s) {
  double sum = 0;
  for (const auto& r : g) sum += run_statistic(r, s);
  return sum / static_cast<double>(g.size());
}

MetricVerdict compare_metric(const std::string& metric, const RunGroup& a, const RunGroup& b, const Runs& runs,
                             const CheckOptions& options) {
  const MetricKind kind = metric_kind(metric);
  MetricVerdict v;
  v.metric = metric;
  v.unit = metric == "throughput" ? runs.front().throughput_unit : kind.unit;
  v.statistic = kind.statistic_text;
  v.higher_is_worse = kind.higher_is_worse;
  v.threshold = threshold_for(metric, options.thresholds);
  if (metric == "loss") {
    v.change = paired_relative_difference(a, b, options.bootstrap);
    v.baseline = group_mean(a, RunStatistic::kMean), v.candidate = group_mean(b, RunStatistic::kMean);
  } else {
    v.change = relative_change(a, b, kind.statistic, options.bootstrap);
    v.baseline = group_mean(a, kind.statistic), v.candidate = group_mean(b, kind.statistic);
    const BetweenRunSpread spread = between_run_spread(a, b, kind.statistic, options.bootstrap);
    v.between_run_spread = v.baseline != 0 ? spread.sd / std::fabs(v.baseline) : 0.0;
    v.between_run_inflation = spread.inflation;
  }
  fill_dependence(a, b, v);
  v.verdict = decide(v.change, v.threshold, v.higher_is_worse);
  bool gating = !options.fail_on_given && gates_by_default(metric);
  for (const auto& t : options.thresholds)
    gating = gating || (options.fail_on_given && (t.metric == metric || (t.metric == "phase:*" && metric.rfind("phase:", 0) == 0) ||
                                                  (t.metric == "comm:*" && metric.rfind("comm:", 0) == 0)));
  v.gating = gating;
  return v;
}

// Why a metric cannot be compared, or "" when it can.
std::string unusable_reason(const std::string& metric, const RunGroup& a, const RunGroup& b, const Runs& runs,
                            std::size_t min_samples) {
  if (metric == "throughput")
    for (const auto& r : runs)
      if (r.throughput_unit != runs.front().throughput_unit) return "the sessions report throughput in different units";
  const std::size_t need = metric_kind(metric).statistic == RunStatistic::kMax ? 1 : min_samples;
  for (const auto* g : {&a, &b})
    for (const auto& run : *g)
      if (run.size() < need) return "a run has " + std::to_string(run.size()) + " samples after warm-up (needs " + std::to_string(need) + ")";
  if (group_mean(a, metric_kind(metric).statistic) == 0 && metric != "loss") return "the baseline's value is 0";
  return "";
}

void require_step_times(const Runs& runs, const std::vector<std::string>& metrics, std::size_t min_samples) {
  for (const auto& r : runs) {
    const auto it = r.series.find("step_time");
    const std::size_t n = it == r.series.end() ? 0 : it->second.size();
    if (n < min_samples)
      throw SessionsError(ErrorKind::kInvalidArgument,
                          "session " + label(r) + " has " + std::to_string(n) + " step times after a warm-up of " +
                              std::to_string(r.warmup_steps) + " steps; a regression check needs at least " +
                              std::to_string(min_samples) + " (run more steps, or lower --warmup)");
  }
  if (std::find(metrics.begin(), metrics.end(), "step_time") == metrics.end())
    throw SessionsError(ErrorKind::kInvalidArgument, "not every session recorded step times");
}

void note_running(const Runs& runs, std::vector<std::string>& notes) {
  for (const auto& r : runs)
    if (r.detail.info.status == "running")
      notes.push_back("session " + label(r) + " is still running (or lost its writer): its later steps are not in the check");
}

void note_mixed_groups(const Runs& runs, const char* side, std::vector<std::string>& notes) {
  for (const auto& r : runs)
    if (r.detail.info.config_hash != runs.front().detail.info.config_hash) {
      notes.push_back(std::string("the ") + side + " sessions do not share one resolved config (" + label(runs.front()) +
                      " vs " + label(r) + "): repeats should differ only in chance");
      return;
    }
}

// A gating metric whose interval reaches past the threshold on both sides: "within noise" there
// means the runs cannot tell, not that nothing moved (noisy repeats, or a host busy with other work).
void note_undecided(const MetricVerdict& v, std::vector<std::string>& notes) {
  if (!v.gating || v.verdict != Verdict::kWithinNoise) return;
  if (std::min(v.change.low, v.change.high) >= -v.threshold || std::max(v.change.low, v.change.high) <= v.threshold) return;
  const auto pct = [](double f) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f%%", 100 * f);
    return std::string(text);
  };
  notes.push_back(v.metric + ": undecided: its interval (" + pct(v.change.low) + " to " + pct(v.change.high) +
                  ") reaches past the threshold (" + pct(v.higher_is_worse ? v.threshold : -v.threshold) +
                  ") both ways, so these runs can tell neither a regression nor its absence; add repeats of each side, "
                  "interleaved, on a host not busy with other work");
}

}  // namespace

RegressionReport check_regression(Store& store, const std::vector<std::int64_t>& baseline,
                                  const std::vector<std::int64_t>& candidate, const CheckOptions& options) {
  require_usable_ids(baseline, candidate);
  Runs a, b;
  for (auto id : baseline) a.push_back(load_run_metrics(store, id, options.warmup_steps));
  for (auto id : candidate) b.push_back(load_run_metrics(store, id, options.warmup_steps));
  std::vector<SessionDetail> details;
  for (const auto* g : {&a, &b})
    for (const auto& r : *g) details.push_back(r.detail);
  detail::require_same_model({details.begin(), details.begin() + static_cast<std::ptrdiff_t>(a.size())},
                             {details.begin() + static_cast<std::ptrdiff_t>(a.size()), details.end()});
  RegressionReport report;
  Runs all = a;
  all.insert(all.end(), b.begin(), b.end());
  for (const auto& r : all) {
    (report.baseline.size() < a.size() ? report.baseline : report.candidate).push_back(r.detail.info);
    report.warmup_steps.push_back(r.warmup_steps);
  }
  const auto metrics = shared_metrics(all, report.notes);
  require_step_times(all, metrics, options.min_samples);
  note_running(all, report.notes);
  note_mixed_groups(a, "baseline", report.notes);
  note_mixed_groups(b, "candidate", report.notes);
  for (const auto& metric : metrics) {
    const auto [ga, gb] = metric == "loss" ? aligned_loss(a, b) : std::make_pair(samples_of(a, metric), samples_of(b, metric));
    if (const std::string why = unusable_reason(metric, ga, gb, all, options.min_samples); !why.empty()) {
      report.notes.push_back(metric + ": " + why + "; left out");
      continue;
    }
    report.metrics.push_back(compare_metric(metric, ga, gb, all, options));
    note_undecided(report.metrics.back(), report.notes);
    report.failed = report.failed || (report.metrics.back().gating && report.metrics.back().verdict == Verdict::kRegression);
  }
  report.contributors = detail::regression_contributors(store, baseline, candidate, report.metrics, options.top_contributors,
                                                        report.profiled, report.notes);
  report.changes = detail::regression_changes(details);
  return report;
}

}  // namespace shardscope::sessions
