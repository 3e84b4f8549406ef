#include "sessions/session_compare.hpp"

#include "sessions/session_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"
#include "sessions/regression_internal.hpp"
#include "sessions/series_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

using nlohmann::json;
using Leaves = std::vector<std::pair<std::string, std::string>>;

void flatten(const json& value, const std::string& path, Leaves& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (value.is_array() && !value.empty()) {
    for (std::size_t i = 0; i < value.size(); ++i) flatten(value[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out.emplace_back(path, value.is_string() ? value.get<std::string>() : lenient_json_text(value));
  }
}

struct SummaryField {
  const char* name;
  bool lower_is_better;
  std::optional<double> (*get)(const SessionSummary&);
};

template <typename T>
std::optional<double> as_double(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

std::optional<double> max_peak_memory(const SessionSummary& s) {
  std::optional<double> best;
  for (const auto& m : s.memory)
    if (m.peak_bytes && (!best || *m.peak_bytes > *best)) best = static_cast<double>(*m.peak_bytes);
  return best;
}

const SummaryField kSummaryFields[] = {
    {"median_step_ms", true, [](const SessionSummary& s) { return s.median_step_ms; }},
    {"p90_step_ms", true, [](const SessionSummary& s) { return s.p90_step_ms; }},
    {"samples_per_s", false, [](const SessionSummary& s) { return s.samples_per_s; }},
    {"tokens_per_s", false, [](const SessionSummary& s) { return s.tokens_per_s; }},
    {"tflops_per_gpu", false, [](const SessionSummary& s) { return s.tflops_per_gpu; }},
    {"mfu", false, [](const SessionSummary& s) { return s.mfu; }},
    {"max_peak_memory_bytes", true, max_peak_memory},
    {"final_loss", true, [](const SessionSummary& s) { return s.final_loss; }},
    {"best_loss", true, [](const SessionSummary& s) { return s.best_loss; }},
    {"skipped_steps", true, [](const SessionSummary& s) { return std::optional<double>(s.skipped_steps); }},
    {"comm_time_s", true, [](const SessionSummary& s) { return s.comm_time_s; }},
    {"comm_fraction", true, [](const SessionSummary& s) { return s.comm_fraction; }},
    {"steps", false, [](const SessionSummary& s) { return std::optional<double>(s.steps); }},
    {"wall_time_s", true, [](const SessionSummary& s) { return s.info.wall_time_s; }},
};

Leaves config_leaves(const SessionDetail& d, Store& store) {
  Leaves leaves;
  if (d.config_json.empty()) return leaves;
  try {
    return flatten_json_text(d.config_json);
  } catch (const std::exception& e) {
    throw StoreError(ErrorKind::kCorrupt, store.path() + ": session " + std::to_string(d.info.id) +
                                              " has a config that is not JSON: " + e.what());
  }
}

// A host's clock offset to 0.1 ms, finer than a probe over a network resolves, with the probe's
// uncertainty: "+12.3 ms (± 0.2 ms)". A value that rounds to zero is "+0.0", never "-0.0", so
// two hosts on the same clock do not show as differing.
std::string clock_offset_text(const SessionHost& h) {
  const auto tenths_of_ms = [](double seconds) {
    const double ms = std::round(seconds * 1e4) / 10;
    return ms == 0 ? 0.0 : ms;
  };
  char text[96];
  if (h.clock_uncertainty_s)
    std::snprintf(text, sizeof text, "%+.1f ms (\xc2\xb1 %.1f ms)", tenths_of_ms(*h.clock_offset_s),
                  tenths_of_ms(*h.clock_uncertainty_s));
  else
    std::snprintf(text, sizeof text, "%+.1f ms", tenths_of_ms(*h.clock_offset_s));
  return text;
}

void check_ids(const std::vector<std::int64_t>& ids) {
  if (ids.size() < kMinCompared || ids.size() > kMaxCompared)
    throw SessionsError(ErrorKind::kInvalidArgument, "compare takes 2 to 8 sessions, got " + std::to_string(ids.size()));
  std::set<std::int64_t> seen;
  for (auto id : ids)
    if (!seen.insert(id).second)
      throw SessionsError(ErrorKind::kInvalidArgument, "session " + std::to_string(id) + " is listed twice");
}

}  // namespace

std::vector<SummaryDelta> summary_deltas(const std::vector<SessionSummary>& sessions) {
  std::vector<SummaryDelta> rows;
  if (sessions.empty()) return rows;
  for (const auto& field : kSummaryFields) {
    SummaryDelta row;
    row.field = field.name;
    row.lower_is_better = field.lower_is_better;
    for (const auto& s : sessions) row.values.push_back(field.get(s));
    const auto& base = row.values.front();
    for (const auto& v : row.values) {
      row.delta.push_back(base && v ? std::optional<double>(*v - *base) : std::nullopt);
      row.delta_percent.push_back(base && v && *base != 0 ? std::optional<double>(100 * (*v - *base) / std::fabs(*base))
                                                          : std::nullopt);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Leaves environment_leaves(const SessionDetail& d) {
  Leaves leaves;
  if (d.environment) flatten(report_to_json(*d.environment), "", leaves);
  // Where the ranks ran belongs to the environment as much as the launching node's report.
  leaves.emplace_back("run.world_size", std::to_string(d.info.world_size));
  leaves.emplace_back("run.origin", d.info.origin.empty() ? "shardscope" : d.info.origin);
  for (const auto& r : d.ranks) {
    const std::string prefix = "run.ranks[" + std::to_string(r.info.rank) + "].";
    leaves.emplace_back(prefix + "host", r.info.host);
    leaves.emplace_back(prefix + "device", r.info.device);
  }
  // Hosts in node order with their ranks, builds and clock offsets (which differ on most runs).
  leaves.emplace_back("run.hosts", std::to_string(d.hosts.size()));
  for (std::size_t i = 0; i < d.hosts.size(); ++i) {
    const auto& h = d.hosts[i];
    const std::string prefix = "run.hosts[" + std::to_string(i) + "].";
    std::string ranks;
    for (int r : h.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    leaves.emplace_back(prefix + "name", h.host);
    leaves.emplace_back(prefix + "ranks", ranks);
    if (!h.shardscope_version.empty())
      leaves.emplace_back(prefix + "shardscope", h.shardscope_version + " (" + h.git_hash + ")");
    if (h.clock_offset_s) leaves.emplace_back(prefix + "clock_offset", clock_offset_text(h));
  }
  for (const auto& [name, value] : d.environment_variables) leaves.emplace_back("env." + name, value);
  return leaves;
}

namespace {

// "--hidden 128", "--hidden=128", "--set k=v", "--activation-checkpointing" (no value) -> leaves.
void add_flag_leaves(const std::vector<std::string>& args, const std::string& prefix, Leaves& out) {
  std::map<std::string, std::string> values;  // joined repeats, keyed by path
  std::vector<std::string> order;
  auto add = [&](const std::string& path, const std::string& value) {
    auto [it, fresh] = values.emplace(path, value);
    if (fresh) order.push_back(path);
    else it->second += ", " + value;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) continue;
    std::string flag = a.substr(2), value = "true";
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    }
    const auto eq = value.find('=');
    if (flag == "set" && eq != std::string::npos)
      add(prefix + "set." + value.substr(0, eq), value.substr(eq + 1));
    else
      add(prefix + flag, value);
  }
  for (const auto& path : order) out.emplace_back(path, values[path]);
}

}  // namespace

Leaves run_leaves(const SessionDetail& d) {
  Leaves out;
  std::string line;
  for (const auto& a : d.command_line) line += (line.empty() ? "" : " ") + a;
  out.emplace_back("command_line", line);
  // shardscope launch <launcher flags> -- <train flags>, or shardscope train <train flags>.
  const auto& argv = d.command_line;
  const auto command = std::find_if(argv.begin(), argv.end(), [](const std::string& a) { return a == "launch" || a == "train"; });
  if (command != argv.end()) {
    const auto separator = std::find(command, argv.end(), std::string("--"));
    const bool launched = *command == "launch";
    if (launched) add_flag_leaves(std::vector<std::string>(command + 1, separator), "launch.", out);
    const auto train_begin = launched ? (separator == argv.end() ? argv.end() : separator + 1) : command + 1;
    add_flag_leaves(std::vector<std::string>(train_begin, argv.end()), "train.", out);
  }
  out.emplace_back("ranks", std::to_string(d.info.world_size));
  std::string hosts;
  for (const auto& h : d.info.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  out.emplace_back("hosts", hosts);
  return out;
}

Leaves flatten_json_text(const std::string& json_text) {
  Leaves out;
  flatten(json::parse(json_text), "", out);
  return out;
}

std::vector<DiffRow> diff_documents(const std::vector<Leaves>& documents, bool diff_only) {
  std::map<std::string, DiffRow> rows;
  for (std::size_t i = 0; i < documents.size(); ++i)
    for (const auto& [path, value] : documents[i]) {
      auto& row = rows[path];
      row.path = path;
      row.values.resize(documents.size());
      row.values[i] = value;
    }
  std::vector<DiffRow> out;
  for (auto& entry : rows) {
    // Not a structured binding: C++17 lambdas cannot capture those (clang refuses; the fuzz build is clang).
    DiffRow& row = entry.second;
    row.values.resize(documents.size());
    const auto& first = row.values[0];
    row.differs = std::any_of(row.values.begin(), row.values.end(), [&first](const auto& v) { return v != first; });
    if (row.differs || !diff_only) out.push_back(std::move(row));
  }
  return out;
}

AlignedCurve align_curves(const std::string& metric, const std::vector<std::vector<CurvePoint>>& curves,
                          const Smoothing& smoothing) {
  AlignedCurve out;
  out.metric = metric;
  std::set<std::int64_t> steps;
  for (const auto& c : curves)
    for (const auto& p : c) steps.insert(p.step);
  out.steps.assign(steps.begin(), steps.end());
  for (const auto& c : curves) {
    std::vector<std::optional<double>> values(out.steps.size());
    std::vector<std::optional<double>> smoothed(out.steps.size());
    std::vector<double> x, y;
    std::vector<std::size_t> where;
    for (const auto& p : c) {
      const auto index = static_cast<std::size_t>(std::lower_bound(out.steps.begin(), out.steps.end(), p.step) -
                                                  out.steps.begin());
      values[index] = p.value;
      x.push_back(static_cast<double>(p.step));
      y.push_back(p.value);
      where.push_back(index);
    }
    const auto s = smooth(x, y, smoothing);
    for (std::size_t i = 0; i < where.size(); ++i) smoothed[where[i]] = s[i];
    out.values.push_back(std::move(values));
    out.smoothed.push_back(std::move(smoothed));
  }
  return out;
}

SessionComparison compare_sessions(Store& store, const std::vector<std::int64_t>& ids, const CompareOptions& options) {
  check_ids(ids);
  SessionComparison out;
  std::vector<Leaves> configs, environments, runs;
  std::vector<SessionDetail> details;
  std::set<std::string> timer_names, series_names;
  for (auto id : ids) {
    const SessionDetail& detail = details.emplace_back(load_session(store, id));
    out.sessions.push_back(summarize_session(store, id, options.summary));
    configs.push_back(config_leaves(detail, store));
    environments.push_back(environment_leaves(detail));
    runs.push_back(run_leaves(detail));
    if (options.include_timers)
      for (auto& name : load_timer_names(store, id)) timer_names.insert(name);
    if (options.include_series)
      for (auto& name : load_series_names(store, id)) series_names.insert(name);
  }
  for (auto metric : options.metrics) {
    std::vector<std::vector<CurvePoint>> curves;
    for (auto id : ids) curves.push_back(load_curve(store, id, metric));
    out.curves.push_back(align_curves(metric_name(metric), curves, options.smoothing));
  }
  for (const auto& name : timer_names) {
    std::vector<std::vector<CurvePoint>> curves;
    for (auto id : ids) curves.push_back(load_timer_curve(store, id, name));
    out.curves.push_back(align_curves("timer:" + name, curves, options.smoothing));
  }
  for (const auto& name : series_names) {
    std::vector<std::vector<CurvePoint>> curves;
    for (auto id : ids) curves.push_back(load_series_curve(store, id, name));
    out.curves.push_back(align_curves("series:" + name, curves, options.smoothing));
  }
  out.summary = summary_deltas(out.sessions);
  out.config_diff = diff_documents(configs, options.diff_only);
  out.environment_diff = diff_documents(environments, options.diff_only);
  out.run_diff = diff_documents(runs, options.diff_only);
  for (auto& c : detail::deepspeed_release_changes(details))
    out.deepspeed_release.push_back({std::move(c.path), std::move(c.values), std::move(c.note)});
  return out;
}

}  // namespace shardscope::sessions
