#include "sessions/regression_json.hpp"

#include <nlohmann/json.hpp>

#include "sessions/session_json.hpp"

namespace shardscope::sessions {
namespace {

using json = nlohmann::json;

json interval_json(const Interval& i) { return {{"estimate", i.estimate}, {"low", i.low}, {"high", i.high}}; }

json metric_json(const MetricVerdict& m) {
  return {{"metric", m.metric},
          {"unit", m.unit},
          {"statistic", m.statistic},
          {"higher_is_worse", m.higher_is_worse},
          {"baseline", m.baseline},
          {"candidate", m.candidate},
          {"change", interval_json(m.change)},
          {"threshold", m.threshold},
          {"gating", m.gating},
          {"verdict", verdict_name(m.verdict)},
          {"samples", {{"baseline", m.baseline_samples}, {"candidate", m.candidate_samples}}},
          {"effective_samples", {{"baseline", m.baseline_effective}, {"candidate", m.candidate_effective}}},
          {"block_length", m.block_length},
          {"between_run_spread", m.between_run_spread},
          {"between_run_inflation", m.between_run_inflation}};
}

json contributor_json(const Contributor& c) {
  return {{"kind", c.kind},
          {"name", c.name},
          {"baseline_ms", c.baseline_ms},
          {"candidate_ms", c.candidate_ms},
          {"delta_ms", c.delta_ms},
          {"share_of_change", c.share_of_change ? json(*c.share_of_change) : json()},
          {"percent_of_step", c.percent_of_step}};
}

json change_json(const ChangedValue& c) {
  json values = json::array();
  for (const auto& v : c.values) values.push_back(v ? json(*v) : json());
  json out{{"kind", c.kind}, {"path", c.path}, {"values", values}};
  if (!c.note.empty()) out["note"] = c.note;
  return out;
}

template <typename T, typename F>
json array_of(const std::vector<T>& items, F f) {
  json out = json::array();
  for (const auto& item : items) out.push_back(f(item));
  return out;
}

}  // namespace

json regression_report_to_json(const RegressionReport& r) {
  return {{"failed", r.failed},
          {"baseline", array_of(r.baseline, session_info_to_json)},
          {"candidate", array_of(r.candidate, session_info_to_json)},
          {"warmup_steps", r.warmup_steps},
          {"metrics", array_of(r.metrics, metric_json)},
          {"profiled", r.profiled},
          {"contributors", array_of(r.contributors, contributor_json)},
          {"changes", array_of(r.changes, change_json)},
          {"notes", r.notes}};
}

json trend_report_to_json(const TrendReport& r) {
  const auto group_json = [](const TrendGroup& g) {
    json out{{"key", g.key}, {"sessions", g.session_ids}, {"started_at", g.started_at}, {"value", interval_json(g.value)}};
    if (g.from_previous)
      out["from_previous"] = {{"change", interval_json(g.from_previous->change)}, {"verdict", verdict_name(g.from_previous->verdict)}};
    return out;
  };
  return {{"metric", r.metric},       {"unit", r.unit},           {"statistic", r.statistic},
          {"higher_is_worse", r.higher_is_worse}, {"grouping", trend_grouping_name(r.grouping)},
          {"threshold", r.threshold}, {"groups", array_of(r.groups, group_json)}, {"notes", r.notes}};
}

}  // namespace shardscope::sessions
