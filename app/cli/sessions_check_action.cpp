// shardscope sessions check|trend --db FILE: regression verdicts for people and CI (issue 30).
// The statistics live in sessions/regression_*; this file parses flags and prints.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "sessions/display_text.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/regression_json.hpp"
#include "sessions/store.hpp"

namespace shardscope::app {
namespace {

using namespace sessions;
using Table = std::vector<std::vector<std::string>>;

void print_table(const Table& raw) {
  Table rows = raw;
  std::vector<std::size_t> width;
  for (auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      row[i] = escape_control_characters(row[i]);  // names and paths come from the session file
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].size(); ++i)
      std::cout << rows[r][i] << (i + 1 < rows[r].size() ? std::string(width[i] - rows[r][i].size() + 2, ' ') : "\n");
    if (r == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w + 2;
      std::cout << std::string(total - 2, '-') << "\n";
    }
  }
}

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

std::string percent(double fraction, bool sign = true) {
  return (sign && fraction >= 0 ? "+" : "") + fixed(100 * fraction, 2) + "%";
}

std::string value_text(double v, const std::string& unit) {
  if (unit == "bytes") return format_bytes(static_cast<std::uint64_t>(std::max(0.0, v)));
  if (unit == "fraction") return fixed(100 * v, 2) + "%";
  std::ostringstream out;
  out << std::setprecision(5) << v;
  return out.str();
}

std::string interval_text(const Interval& i) { return "[" + percent(i.low) + ", " + percent(i.high) + "]"; }

std::string threshold_text(const MetricVerdict& m) { return (m.higher_is_worse ? "+" : "-") + fixed(100 * m.threshold, 1) + "%"; }

std::string verdict_text(Verdict v, bool gating) {
  std::string t = verdict_name(v);
  if (v == Verdict::kRegression) t = gating ? "REGRESSION" : "regression (not gating)";
  std::replace(t.begin(), t.end(), '_', ' ');
  return t;
}

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw UsageError("--" + flag + " needs one or more sessions separated by commas");
  return out;
}

std::string session_list(const std::vector<SessionInfo>& infos) {
  std::string out;
  for (const auto& s : infos) out += (out.empty() ? "" : ", ") + ("#" + std::to_string(s.id) + " '" + s.name + "'");
  return escape_control_characters(out);
}

void print_metrics(const RegressionReport& r) {
  Table t{{"metric", "baseline", "candidate", "change", "95% interval", "threshold", "verdict"}};
  for (const auto& m : r.metrics)
    t.push_back({m.metric + (m.unit.empty() || m.unit == "bytes" || m.unit == "fraction" ? "" : " (" + m.unit + ")"),
                 value_text(m.baseline, m.unit), value_text(m.candidate, m.unit), percent(m.change.estimate),
                 interval_text(m.change), threshold_text(m) + (m.gating ? "" : " (info)"), verdict_text(m.verdict, m.gating)});
  print_table(t);
  for (const auto& m : r.metrics)
    if (m.between_run_spread > 0 && (m.metric == "step_time" || m.gating))
      std::cout << "  " << escape_control_characters(m.metric) << ": the repeats' runs differ by " << percent(m.between_run_spread, false)
                << " (sd) beyond their step noise, counted " << fixed(m.between_run_inflation, 2) << "-fold in the interval\n";
}

void print_contributors(const RegressionReport& r) {
  if (r.contributors.empty()) return;
  std::cout << "\nwhat moved (ms per step; 'of step' is the delta over the baseline's step time):\n";
  Table t{{"kind", "name", "baseline", "candidate", "delta", "of step", "share of change"}};
  for (const auto& c : r.contributors)
    t.push_back({c.kind, c.name, fixed(c.baseline_ms, 3), fixed(c.candidate_ms, 3), (c.delta_ms >= 0 ? "+" : "") + fixed(c.delta_ms, 3),
                 percent(c.percent_of_step / 100), c.share_of_change ? percent(*c.share_of_change, false) : "-"});
  print_table(t);
}

void print_changes(const RegressionReport& r) {
  std::cout << "\nwhat changed" << (r.changes.empty() ? ": nothing recorded differs\n" : " (baseline sessions, then candidates):\n");
  if (r.changes.empty()) return;
  std::vector<std::string> header{"kind", "path"};
  for (const auto* g : {&r.baseline, &r.candidate})
    for (const auto& s : *g) header.push_back("#" + std::to_string(s.id));
  Table t{header};
  for (const auto& c : r.changes) {
    std::vector<std::string> row{c.kind, c.path};
    for (const auto& v : c.values) row.push_back(v ? *v : "(absent)");
    t.push_back(row);
  }
  print_table(t);
  for (const auto& c : r.changes)
    if (!c.note.empty()) std::cout << "  " << escape_control_characters(c.path + ": " + c.note) << "\n";
}

// The line CI logs show: the metric, the change, the interval and the top contributor.
void print_outcome(const RegressionReport& r) {
  const Contributor* top = nullptr;
  for (const auto& c : r.contributors)
    if (c.kind != "phase" && (!top || std::fabs(c.delta_ms) > std::fabs(top->delta_ms))) top = &c;
  bool any = false;
  for (const auto& m : r.metrics) {
    if (!m.gating || m.verdict != Verdict::kRegression) continue;
    any = true;
    std::cout << "FAILED: " << escape_control_characters(m.metric) << " " << percent(m.change.estimate) << " " << interval_text(m.change)
              << " is worse than " << threshold_text(m);
    if (m.metric == "step_time" && top)
      std::cout << "; of which " << percent(top->percent_of_step / 100) << " is " << top->kind << " "
                << escape_control_characters(top->name);
    std::cout << "\n";
  }
  if (!any) std::cout << "OK: no gating metric regressed beyond its threshold\n";
}

void print_report(const RegressionReport& r) {
  std::cout << "baseline   " << session_list(r.baseline) << "\ncandidate  " << session_list(r.candidate)
            << "\nwarm-up    ";
  for (std::size_t i = 0; i < r.warmup_steps.size(); ++i) std::cout << (i ? ", " : "") << r.warmup_steps[i];
  std::cout << " steps\n\n";
  print_metrics(r);
  print_contributors(r);
  print_changes(r);
  if (!r.notes.empty()) std::cout << "\nnotes:\n";
  for (const auto& n : r.notes) std::cout << "  " << escape_control_characters(n) << "\n";
  std::cout << "\n";
  print_outcome(r);
}

Store open_read_only(const std::string& path) {
  StoreOpenOptions options;
  options.read_only = true;  // a CI job may hold the store on a read-only mount
  return Store::open(path, options);
}

std::vector<std::int64_t> resolve_list(Store& store, const std::string& flag, const std::string& text) {
  std::vector<std::int64_t> ids;
  for (const auto& s : split_list(flag, text)) ids.push_back(find_session(store, s));
  return ids;
}

std::optional<std::int64_t> warmup_flag(const ParsedArgs& parsed) {
  const auto w = parsed.integer("warmup");
  if (w && *w < 0) throw UsageError("--warmup must be 0 or more");
  return w ? std::optional<std::int64_t>(*w) : std::nullopt;
}

}  // namespace

int run_sessions_check(const CommandArgs& args) {
  ArgParser parser("sessions check",
                   "Judges a candidate against a baseline (each one session or repeats, comma-separated):\n"
                   "per metric the change with its 95% interval and a verdict against thresholds, what moved\n"
                   "(kernel families, collectives, phases) and what changed (versions, config, DeepSpeed\n"
                   "defaults). Exit code 1 when a gating metric regressed, 0 otherwise, 2 for unusable input\n"
                   "(e.g. sessions of different models). docs/sessions.md, \"Regression checks\".");
  parser.option("db", "FILE", "the session store")
      .option("baseline", "A[,A2...]", "baseline sessions (ids, uid prefixes or names)")
      .option("candidate", "B[,B2...]", "candidate sessions")
      .option("fail-on", "LIST", "gating thresholds, e.g. 'step_time:+3%,peak_memory:+2%' (default: documented set)")
      .option("warmup", "N", "leave the first N steps of each run out (default max(2, 10%))")
      .option("top", "N", "contributors shown per kind (default 8)")
      .flag("json", "print one JSON document");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  for (const char* flag : {"db", "baseline", "candidate"})
    if (!parsed.value(flag)) throw UsageError(std::string("'sessions check' needs --") + flag);
  CheckOptions options;
  options.warmup_steps = warmup_flag(parsed);
  if (auto f = parsed.value("fail-on")) options.thresholds = parse_thresholds(*f), options.fail_on_given = true;
  if (auto top = parsed.integer("top")) options.top_contributors = static_cast<std::size_t>(std::max(0LL, *top));
  Store store = open_read_only(*parsed.value("db"));
  const auto report = check_regression(store, resolve_list(store, "baseline", *parsed.value("baseline")),
                                       resolve_list(store, "candidate", *parsed.value("candidate")), options);
  if (parsed.has("json")) std::cout << regression_report_to_json(report).dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
  else print_report(report);
  return report.failed ? kExitFindings : kExitOk;
}

int run_sessions_trend(const CommandArgs& args) {
  ArgParser parser("sessions trend",
                   "One metric over many sessions, per session or grouped by ShardScope version, tag or day:\n"
                   "its value with a 95% interval and the groups where it stepped (a regression or\n"
                   "improvement beyond the threshold against the group before). METRIC: step_time,\n"
                   "throughput, mfu, peak_memory, reserved_memory, loss, phase:NAME, comm:OP.");
  parser.positional("METRIC", "the metric")
      .option("db", "FILE", "the session store")
      .option("by", "version|tag|date|session", "how sessions are grouped (default session)")
      .option("name", "TEXT", "only sessions whose name contains TEXT")
      .option("tag", "TAG", "only sessions tagged TAG")
      .option("threshold", "N%", "a step counts beyond N% (default: the metric's default threshold)")
      .option("warmup", "N", "leave the first N steps of each run out (default max(2, 10%))")
      .flag("json", "print one JSON document");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  if (!parsed.value("db")) throw UsageError("'sessions trend' needs --db FILE");
  TrendOptions options;
  if (auto by = parsed.value("by")) options.grouping = trend_grouping_from_name(*by);
  options.filter.name_contains = parsed.value("name").value_or("");
  options.filter.tag = parsed.value("tag").value_or("");
  options.warmup_steps = warmup_flag(parsed);
  const std::string metric = parsed.positionals[0];
  if (auto t = parsed.value("threshold")) options.threshold = parse_thresholds(metric + ":" + *t).front().fraction;
  Store store = open_read_only(*parsed.value("db"));
  const TrendReport r = metric_trend(store, metric, options);
  if (parsed.has("json")) {
    std::cout << trend_report_to_json(r).dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::cout << r.metric << (r.unit.empty() ? "" : " (" + r.unit + ")") << ", " << r.statistic << ", by "
            << trend_grouping_name(r.grouping) << "; a step is a change beyond " << fixed(100 * r.threshold, 1) << "%\n\n";
  Table t{{trend_grouping_name(r.grouping), "sessions", "value", "95% interval", "vs previous", "95% interval", "verdict"}};
  for (const auto& g : r.groups) {
    const auto& p = g.from_previous;
    const bool stepped = p && (p->verdict == Verdict::kRegression || p->verdict == Verdict::kImprovement);
    t.push_back({g.key, std::to_string(g.session_ids.size()), value_text(g.value.estimate, r.unit),
                 "[" + value_text(g.value.low, r.unit) + ", " + value_text(g.value.high, r.unit) + "]",
                 p ? percent(p->change.estimate) : "-", p ? interval_text(p->change) : "-",
                 p ? verdict_text(p->verdict, true) + (stepped ? "  <- stepped" : "") : "-"});
  }
  print_table(t);
  for (const auto& n : r.notes) std::cout << "note: " << escape_control_characters(n) << "\n";
  return kExitOk;
}

}  // namespace shardscope::app
