#include "app/gui/sessions/verdict_data.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "app/gui/common/cli_locator.hpp"  // shell_command only (Qt-free itself)
#include "sessions/display_text.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

std::string interval_text(const ss::Interval& i) { return "[" + signed_percent(i.low) + ", " + signed_percent(i.high) + "]"; }

TableCell text(std::string s) { return {ss::escape_control_characters(s), std::nullopt}; }
TableCell number(std::string s, double v) { return {std::move(s), v}; }

std::string ids_of(const std::vector<SessionRef>& refs) {
  std::string out;
  for (const auto& r : refs) out += (out.empty() ? "" : ",") + std::to_string(r.id);
  return out;
}

std::string metric_title(const ss::MetricVerdict& m) {
  const bool shown_unit = !m.unit.empty() && m.unit != "bytes" && m.unit != "fraction";
  return m.metric + (shown_unit ? " (" + m.unit + ")" : "");
}

// How the row's interval came about: what a performance engineer asks before trusting it.
std::string metric_tooltip(const ss::MetricVerdict& m) {
  std::ostringstream out;
  out << m.statistic << "; " << m.baseline_samples << " baseline and " << m.candidate_samples
      << " candidate samples (effective " << fixed(m.baseline_effective, 1) << " and " << fixed(m.candidate_effective, 1)
      << " after autocorrelation), circular blocks up to " << m.block_length << " steps";
  if (m.between_run_spread > 0)
    out << "; the repeats' runs differ by " << fixed(100 * m.between_run_spread, 2) << "% (sd) beyond their step noise, counted "
        << fixed(m.between_run_inflation, 2) << "-fold";
  out << (m.gating ? "; gates the check" : "; for information (does not gate)");
  return out.str();
}

TextTable metric_table(const ss::RegressionReport& r) {
  TextTable t{{"metric", "baseline", "candidate", "change", "95% interval", "threshold", "verdict"}, {}};
  for (const auto& m : r.metrics) {
    const std::string threshold = (m.higher_is_worse ? "+" : "-") + fixed(100 * m.threshold, 1) + "%" + (m.gating ? "" : " (info)");
    t.rows.push_back({{text(metric_title(m)), number(verdict_value_text(m.baseline, m.unit), m.baseline),
                       number(verdict_value_text(m.candidate, m.unit), m.candidate),
                       number(signed_percent(m.change.estimate), m.change.estimate), number(interval_text(m.change), m.change.low),
                       number(threshold, m.threshold), text(verdict_text(m.verdict, m.gating))},
                      verdict_tone(m.verdict), metric_tooltip(m)});
  }
  return t;
}

TextTable contributor_table(const ss::RegressionReport& r) {
  TextTable t{{"kind", "name", "baseline (ms/step)", "candidate (ms/step)", "delta (ms)", "of step", "share of change"}, {}};
  for (const auto& c : r.contributors) {
    TableRow row{{text(c.kind), text(c.name), number(fixed(c.baseline_ms, 3), c.baseline_ms), number(fixed(c.candidate_ms, 3), c.candidate_ms),
                  number((c.delta_ms >= 0 ? "+" : "") + fixed(c.delta_ms, 3), c.delta_ms),
                  number(signed_percent(c.percent_of_step / 100), c.percent_of_step / 100),
                  c.share_of_change ? number(fixed(100 * *c.share_of_change, 1) + "%", *c.share_of_change) : text("-")},
                 RowTone::kPlain,
                 c.kind == "phase" ? "Double-click: the candidate's profile, its Phases pane"
                                   : "Double-click: the candidate's profile narrowed to this " + c.kind};
    t.rows.push_back(std::move(row));
  }
  return t;
}

TextTable change_table(const ss::RegressionReport& r) {
  TextTable t{{"kind", "path"}, {}};
  for (const auto* group : {&r.baseline, &r.candidate})
    for (const auto& s : *group) t.headers.push_back("#" + std::to_string(s.id) + " " + ss::escape_control_characters(s.name));
  t.headers.push_back("note");
  for (const auto& c : r.changes) {
    TableRow row{{text(c.kind), text(c.path)}, c.kind == "default_flip" ? RowTone::kDefaultFlip : RowTone::kPlain, c.note};
    for (const auto& v : c.values) row.cells.push_back(text(v ? *v : "(absent)"));
    row.cells.push_back(text(c.note));
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The line CI logs show (app/cli's print_outcome): the failing metrics and the step's top mover.
std::string headline_of(const ss::RegressionReport& r) {
  const ss::Contributor* top = nullptr;
  for (const auto& c : r.contributors)
    if (c.kind != "phase" && (!top || std::fabs(c.delta_ms) > std::fabs(top->delta_ms))) top = &c;
  std::string out;
  for (const auto& m : r.metrics) {
    if (!m.gating || m.verdict != ss::Verdict::kRegression) continue;
    out += (out.empty() ? "" : "\n") + ("FAILED: " + ss::escape_control_characters(m.metric) + " " + signed_percent(m.change.estimate) + " " + interval_text(m.change) +
                                        " is worse than " + (m.higher_is_worse ? "+" : "-") + fixed(100 * m.threshold, 1) + "%");
    if (m.metric == "step_time" && top)
      out += "; of which " + signed_percent(top->percent_of_step / 100) + " is " + top->kind + " " + ss::escape_control_characters(top->name);
  }
  return out.empty() ? "OK: no gating metric regressed beyond its threshold" : out;  // one line per failure
}

ss::Store open_read_only(const std::string& file) {
  ss::StoreOpenOptions options;
  options.read_only = true;
  return ss::Store::open(file, options);
}

std::vector<std::int64_t> ids(const std::vector<SessionRef>& refs) {
  std::vector<std::int64_t> out;
  for (const auto& r : refs) out.push_back(r.id);
  return out;
}

void require_one_file(const VerdictRequest& q) {
  if (q.baseline.empty() || q.candidate.empty()) throw std::invalid_argument("a verdict needs a baseline and a candidate: compare 2 sessions or more");
  std::set<std::string> files;
  for (const auto* g : {&q.baseline, &q.candidate})
    for (const auto& r : *g) files.insert(r.file);
  if (files.size() > 1)
    throw std::invalid_argument("a verdict compares sessions of one file (as `sessions check --db FILE` does); these are in " +
                                std::to_string(files.size()) + " files: copy them into one with `shardscope sessions export`/`import`, or compare sessions of one file");
}

// The longest kernel (summed over ranks) whose family is `family`, or "".
std::string longest_kernel_of(const std::string& family, const profiler::ProfileRecords& records) {
  std::map<std::string, double> ns;
  for (const auto& [rank, list] : records.activities)
    for (const auto& a : list)
      if (a.kind == ss::ActivityKind::kKernel && ss::kernel_family(a.name) == family) ns[a.name] += double(a.end_ns - a.start_ns);
  const auto best = std::max_element(ns.begin(), ns.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  return best == ns.end() ? std::string() : best->first;
}

std::string grouping_flag(ss::TrendGrouping g) { return ss::trend_grouping_name(g); }

TextTable trend_table(const ss::TrendReport& r) {
  TextTable t{{ss::trend_grouping_name(r.grouping), "sessions", "value", "95% interval", "vs previous", "95% interval", "verdict"}, {}};
  for (const auto& g : r.groups) {
    const auto& p = g.from_previous;
    TableRow row{{text(g.key), number(std::to_string(g.session_ids.size()), double(g.session_ids.size())),
                  number(verdict_value_text(g.value.estimate, r.unit), g.value.estimate),
                  number("[" + verdict_value_text(g.value.low, r.unit) + ", " + verdict_value_text(g.value.high, r.unit) + "]", g.value.low),
                  p ? number(signed_percent(p->change.estimate), p->change.estimate) : text("-"),
                  p ? number(interval_text(p->change), p->change.low) : text("-"), text(p ? verdict_text(p->verdict, true) : "-")},
                 p ? verdict_tone(p->verdict) : RowTone::kPlain, ""};
    std::string sessions;
    for (auto id : g.session_ids) sessions += (sessions.empty() ? "sessions #" : ", #") + std::to_string(id);
    row.tooltip = sessions;
    t.rows.push_back(std::move(row));
  }
  return t;
}

void set_trend_axis(TrendView& v) {
  const std::string& unit = v.report.unit;
  if (unit == "bytes") {
    double largest = 0;
    for (const auto& g : v.report.groups) largest = std::max(largest, std::fabs(g.value.high));
    const bool gib = largest >= double(1ull << 30);
    v.axis_scale = gib ? double(1ull << 30) : double(1ull << 20);
    v.axis_title = v.report.metric + (gib ? " (GiB)" : " (MiB)");
  } else if (unit == "fraction") {
    v.axis_scale = 0.01;
    v.axis_title = v.report.metric + " (%)";
  } else {
    v.axis_title = v.report.metric + (unit.empty() ? "" : " (" + unit + ")");
  }
}

}  // namespace

std::string verdict_value_text(double v, const std::string& unit) {
  if (unit == "bytes") return ss::format_bytes(static_cast<std::uint64_t>(std::max(0.0, v)));
  if (unit == "fraction") return fixed(100 * v, 2) + "%";
  std::ostringstream out;
  out << std::setprecision(5) << v;
  return out.str();
}

std::string signed_percent(double fraction) { return (fraction >= 0 ? "+" : "") + fixed(100 * fraction, 2) + "%"; }

std::string verdict_text(ss::Verdict v, bool gating) {
  std::string t = ss::verdict_name(v);
  if (v == ss::Verdict::kRegression) t = gating ? "REGRESSION" : "regression (not gating)";
  std::replace(t.begin(), t.end(), '_', ' ');
  return t;
}

std::vector<VerdictGroups> verdict_group_choices(const std::vector<SessionRef>& refs, const std::vector<std::string>& config_hashes) {
  std::vector<VerdictGroups> out;
  if (refs.size() < 2) return out;
  for (std::size_t i = 1; i < refs.size(); ++i)
    out.push_back({{0}, {i}, refs[i].label + " vs " + refs[0].label + " (baseline)"});
  const std::set<std::string> configs(config_hashes.begin(), config_hashes.end());
  if (refs.size() < 3 || configs.size() != 2 || config_hashes.size() != refs.size()) return out;
  VerdictGroups repeats;
  for (std::size_t i = 0; i < refs.size(); ++i) (config_hashes[i] == config_hashes[0] ? repeats.baseline : repeats.candidate).push_back(i);
  repeats.label = "repeats by config: " + std::to_string(repeats.candidate.size()) + " of config " + config_hashes[repeats.candidate[0]].substr(0, 8) +
                  " vs " + std::to_string(repeats.baseline.size()) + " of " + config_hashes[0].substr(0, 8) + " (baseline)";
  out.push_back(std::move(repeats));
  return out;
}

std::string verdict_cli_command(const VerdictRequest& q) {
  std::vector<std::string> args = {"sessions", "check", "--db", q.baseline.empty() ? std::string("FILE") : q.baseline.front().file,
                                   "--baseline", ids_of(q.baseline), "--candidate", ids_of(q.candidate)};
  if (!q.fail_on.empty()) args.insert(args.end(), {"--fail-on", q.fail_on});
  if (q.warmup_steps >= 0) args.insert(args.end(), {"--warmup", std::to_string(q.warmup_steps)});
  return shell_command("shardscope", args);
}

VerdictView compute_verdict(const VerdictRequest& request) {
  VerdictView v;
  v.request = request;
  v.cli = verdict_cli_command(request);
  try {
    require_one_file(request);
    ss::CheckOptions options;
    if (request.warmup_steps >= 0) options.warmup_steps = request.warmup_steps;
    if (!request.fail_on.empty()) options.thresholds = ss::parse_thresholds(request.fail_on), options.fail_on_given = true;
    ss::Store store = open_read_only(request.baseline.front().file);
    v.report = ss::check_regression(store, ids(request.baseline), ids(request.candidate), options);
  } catch (const std::exception& e) {
    v.error = ss::escape_control_characters(e.what());
    return v;
  }
  v.metrics = metric_table(v.report);
  v.contributors = contributor_table(v.report);
  v.changes = change_table(v.report);
  v.headline = headline_of(v.report);
  return v;
}

ProfileTarget profile_target(const ss::Contributor& c, const profiler::ProfileRecords& records) {
  ProfileTarget t;
  if (c.kind == "phase") {
    t.pane = "Phases";
  } else if (c.kind == "kernel") {
    t.pane = "Top kernels";
    t.selection.kernel = longest_kernel_of(c.name, records);
    if (t.selection.kernel.empty()) t.note = "no kernel of family " + c.name + " in this session's profiled window";
  } else {
    t.pane = "Collectives";
    // "nccl:AllReduce" is a kernel family: the op its kernels run; else the comms logger's op name.
    t.selection.collective = c.name.rfind("nccl", 0) == 0 ? profiler::collective_of_kernel(longest_kernel_of(c.name, records)) : c.name;
    if (t.selection.collective.empty()) t.note = "no kernel of " + c.name + " in this session's profiled window";
  }
  return t;
}

std::string trend_cli_command(const TrendRequest& q) {
  std::vector<std::string> args = {"sessions", "trend", q.metric, "--db", q.file, "--by", grouping_flag(q.grouping)};
  if (!q.tag.empty()) args.insert(args.end(), {"--tag", q.tag});
  if (!q.name_contains.empty()) args.insert(args.end(), {"--name", q.name_contains});
  if (q.warmup_steps >= 0) args.insert(args.end(), {"--warmup", std::to_string(q.warmup_steps)});
  return shell_command("shardscope", args);
}

TrendView compute_trend(const TrendRequest& request) {
  TrendView v;
  v.request = request;
  v.cli = trend_cli_command(request);
  try {
    if (request.file.empty()) throw std::invalid_argument("open a session file to follow a metric over its sessions");
    ss::TrendOptions options;
    options.grouping = request.grouping;
    options.filter.tag = request.tag;
    options.filter.name_contains = request.name_contains;
    if (request.warmup_steps >= 0) options.warmup_steps = request.warmup_steps;
    ss::Store store = open_read_only(request.file);
    v.report = ss::metric_trend(store, request.metric, options);
  } catch (const std::exception& e) {
    v.error = ss::escape_control_characters(e.what());
    return v;
  }
  v.groups = trend_table(v.report);
  set_trend_axis(v);
  return v;
}

std::vector<std::string> trend_metric_choices(const ss::RegressionReport* report) {
  std::vector<std::string> out = {"step_time", "throughput", "mfu", "peak_memory", "reserved_memory", "loss"};
  if (!report) return out;
  for (const auto& m : report->metrics)
    if (m.metric.rfind("phase:", 0) == 0 || m.metric.rfind("comm:", 0) == 0) out.push_back(m.metric);
  return out;
}

RowTone verdict_tone(ss::Verdict v) {
  switch (v) {
    case ss::Verdict::kRegression: return RowTone::kRegression;
    case ss::Verdict::kImprovement: return RowTone::kImprovement;
    case ss::Verdict::kWithinThreshold: return RowTone::kWithinThreshold;
    case ss::Verdict::kWithinNoise: return RowTone::kWithinNoise;
  }
  return RowTone::kPlain;
}

}  // namespace shardscope::gui
