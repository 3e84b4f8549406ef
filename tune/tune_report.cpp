#include "tune/tune_report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "sessions/atomic_output.hpp"
#include "tune/candidate_config.hpp"
#include "tune/tune_run.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

std::string fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string bytes_cell(const std::optional<double>& b) { return b ? gib_text(*b) : "-"; }

std::string metric_cell(const sessions::TuneTrialRecord& t) {
  return t.metric_value && t.status == "ok" ? fixed(*t.metric_value, 2) : "-";
}

bool lower_is_better(const std::string& metric) { return metric == "step_time"; }

}  // namespace

std::vector<std::size_t> ranked_trials(const std::vector<sessions::TuneTrialRecord>& trials, const std::string& metric) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == "ok" && trials[i].metric_value) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
    return lower_is_better(metric) ? *trials[a].metric_value < *trials[b].metric_value
                                   : *trials[a].metric_value > *trials[b].metric_value;
  });
  return ok;
}

namespace {

void write_file(const std::string& path, const std::string& text) {
  sessions::AtomicOutput out(path);
  out.stream() << text;
  out.commit();
}

Assignment assignment_of(const sessions::TuneTrialRecord& t) {
  Assignment a;
  const json params = json::parse(t.params_json);
  for (const auto& [k, v] : params.items()) a.emplace_back(k, v);
  return a;
}

// The keys whose values differ between two trials, as "key: best vs runner-up".
std::string differences(const sessions::TuneTrialRecord& best, const sessions::TuneTrialRecord& other) {
  const json a = json::parse(best.params_json), b = json::parse(other.params_json);
  std::string out;
  for (const auto& [k, v] : a.items()) {
    const json w = b.contains(k) ? b[k] : json();
    if (v != w) out += "  - `" + k + "`: " + v.dump() + " (best) vs " + w.dump() + " (runner-up)\n";
  }
  return out.empty() ? "  - no tuned key differs\n" : out;
}

std::string percent(double a, double b) { return b != 0 ? fixed(100.0 * (a - b) / b, 1) + " %" : "-"; }

std::string why_it_won(const TuneRequest& r, const TuneOutcome& o, const std::vector<std::size_t>& order) {
  const auto& t = o.trials;
  const std::string metric = tune_metric_name(r.metric);
  const auto& best = t[order[0]];
  std::ostringstream md;
  md << "## Best: trial " << best.trial << " (" << best.name << ")\n\n"
     << "- " << metric << " " << fixed(*best.metric_value, 2) << " (median over steps " << r.start_profile_step << "-"
     << r.end_profile_step << ", whole-step wall time, all ranks)\n"
     << "- predicted " << bytes_cell(best.predicted_bytes) << " per rank against " << gib_text(r.memory.usable_bytes())
     << " usable; measured peak " << (best.measured_peak_bytes ? gib_text(static_cast<double>(*best.measured_peak_bytes)) : "-") << "\n"
     << "- session `" << best.session_uid << "` (tagged `tune:" << o.run_uid << "`)\n\n"
     << "It won because it had the " << (lower_is_better(metric) ? "lowest" : "highest") << " " << metric << " of the "
     << order.size() << " trial(s) that ran to the end.\n\n";
  if (order.size() < 2) {
    md << "No runner-up: only one trial finished.\n\n";
    return md.str();
  }
  const auto& second = t[order[1]];
  md << "## Runner-up: trial " << second.trial << " (" << second.name << ")\n\n"
     << "- " << metric << " " << fixed(*second.metric_value, 2) << ": " << percent(*second.metric_value, *best.metric_value)
     << " against the best\n";
  if (best.measured_peak_bytes && second.measured_peak_bytes)
    md << "- measured peak " << gib_text(static_cast<double>(*second.measured_peak_bytes)) << " ("
       << percent(static_cast<double>(*second.measured_peak_bytes), static_cast<double>(*best.measured_peak_bytes))
       << " against the best's)\n";
  md << "- what differs:\n" << differences(best, second) << "\n";
  return md.str();
}

std::string report_text(const TuneRequest& r, const TuneOutcome& o, const std::vector<std::size_t>& order) {
  std::map<std::string, int> counts;
  for (const auto& t : o.trials) ++counts[t.status];
  std::ostringstream md;
  md << "# shardscope tune report\n\n"
     << "Tune run `" << o.run_uid << "` of `" << r.config_path << "`, " << r.world_size << " rank(s), tuner "
     << tuner_type_name(r.tuner) << ", metric " << tune_metric_name(r.metric) << ". Stopped: " << o.stop_reason << ".\n\n"
     << o.grid_points << " grid point(s); " << o.trials.size() << " candidate(s): " << counts["ok"] << " ok, "
     << counts["pruned"] << " pruned by the estimator (budget " << gib_text(r.memory.bytes) << " " << r.memory.source
     << ", margin " << fixed(r.memory.margin * 100, 0) << " %), " << counts["oom"] << " out of memory, "
     << counts["failed"] << " failed, " << counts["skipped"] << " skipped as slower by construction.\n\n";
  for (const auto& line : o.left_out) md << "- left out, DeepSpeed would refuse it: " << line << "\n";
  if (!o.left_out.empty()) md << "\n";
  if (order.empty()) md << "## No best\n\nNo trial ran to the end; the table says why each one stopped.\n\n";
  else md << why_it_won(r, o, order);
  md << "## All candidates\n\n```\n" << format_results_table(o.trials, tune_metric_name(r.metric)) << "```\n";
  return md.str();
}

}  // namespace

std::string format_results_table(const std::vector<sessions::TuneTrialRecord>& trials, const std::string& metric) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%5s  %-40s  %12s  %12s  %14s  %-7s  %s\n", "trial", "parameters", "predicted",
                "peak", metric.c_str(), "status", "note");
  out << line;
  for (const auto& t : trials) {
    const std::string peak = t.measured_peak_bytes ? gib_text(static_cast<double>(*t.measured_peak_bytes)) : "-";
    std::string note = t.message.size() > 100 ? t.message.substr(0, 100) + "..." : t.message;
    std::snprintf(line, sizeof line, "%5lld  %-40s  %12s  %12s  %14s  %-7s  %s\n", static_cast<long long>(t.trial),
                  t.name.c_str(), bytes_cell(t.predicted_bytes).c_str(), peak.c_str(), metric_cell(t).c_str(),
                  t.status.c_str(), note.c_str());
    out << line;
  }
  return out.str();
}

void write_tune_outputs(const TuneRequest& r, TuneOutcome& o) {
  const auto order = ranked_trials(o.trials, tune_metric_name(r.metric));
  if (!order.empty()) o.best = order[0];
  if (order.size() > 1) o.runner_up = order[1];
  const std::filesystem::path out(r.out_dir);
  if (o.best) {
    o.best_config_path = (out / "ds_config.json").string();
    write_file(o.best_config_path, candidate_config(r.user_config, assignment_of(o.trials[*o.best])).dump(2) + "\n");
  }
  o.report_path = (out / "tune_report.md").string();
  write_file(o.report_path, report_text(r, o, order));
}

}  // namespace shardscope::tune
