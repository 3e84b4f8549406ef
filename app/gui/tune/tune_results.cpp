#include "app/gui/tune/tune_results.hpp"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tune/candidate_config.hpp"
#include "tune/memory_pruning.hpp"
#include "tune/tune_report.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;
using nlohmann::json;

ss::Store open_read_only(const std::string& db) {
  ss::StoreOpenOptions options;
  options.read_only = true;
  options.integrity = ss::IntegrityCheck::kSkip;  // read twice a second while the tuner writes
  return ss::Store::open(db, options);
}

std::string params_text(const std::string& params_json) {
  std::string text;
  try {
    const json params = json::parse(params_json);  // items() of a temporary would dangle
    for (const auto& [key, value] : params.items())
      text += (text.empty() ? "" : "\n") + key + " = " + (value.is_null() ? "default" : value.dump());
  } catch (const json::exception&) {
    text = params_json;
  }
  return text;
}

TrialRow row_of(const ss::TuneTrialRecord& t) {
  TrialRow r;
  r.trial = t.trial;
  r.name = t.name;
  r.params = params_text(t.params_json);
  r.predicted_bytes = t.predicted_bytes;
  if (t.measured_peak_bytes) r.peak_bytes = static_cast<double>(*t.measured_peak_bytes);
  if (t.status == "ok") r.metric = t.metric_value;
  r.status = t.status;
  r.mark = trial_mark(t.status);
  r.message = t.message;
  r.session_uid = t.session_uid;
  return r;
}

// The scatter's y: the run's throughput metric, or tokens/s when it tunes step time.
std::optional<double> throughput_of(const ss::TuneTrialRecord& t, const std::string& metric) {
  if (t.status != "ok") return std::nullopt;
  return metric == "samples_per_s" ? t.samples_per_s : t.tokens_per_s;
}

ScatterPoint point_of(const TrialRow& row, std::size_t index, std::optional<double> throughput) {
  ScatterPoint p;
  p.row = index;
  p.mark = row.mark;
  p.best = row.best;
  p.predicted_bytes = row.predicted_bytes;
  p.x_bytes = row.peak_bytes ? *row.peak_bytes : row.predicted_bytes.value_or(0);
  p.y = throughput.value_or(0);
  if (!throughput && row.mark == TrialMark::kOk) p.mark = TrialMark::kFailed;  // ok without a measure: none to plot
  return p;
}

void read_request(const ss::TuneRunRecord& run, TuneView& view) {
  try {
    const json request = json::parse(run.request_json);
    view.metric = request.value("metric", "tokens_per_s");
    const double budget = request.value("memory_budget_bytes", 0.0);
    if (budget > 0) view.usable_bytes = budget * (1.0 - request.value("memory_margin", 0.10));
  } catch (const json::exception&) {
    view.metric = "tokens_per_s";  // a request this build cannot read still has its trials
  }
}

void name_metric(TuneView& view) {
  if (view.metric.empty()) view.metric = "tokens_per_s";
  view.metric_header = view.metric == "step_time" ? "step time (ms)"
                       : view.metric == "samples_per_s" ? "samples/s" : "tokens/s";
  view.throughput_label = view.metric == "samples_per_s" ? "samples/s (all ranks)" : "tokens/s (all ranks)";
}

std::string count_text(const std::vector<TrialRow>& rows) {
  constexpr int kMarks = 6;
  int counts[kMarks] = {};
  for (const auto& r : rows) ++counts[static_cast<int>(r.mark)];
  const char* names[kMarks] = {"ok", "pruned", "out of memory", "failed", "running", "skipped (slower by construction)"};
  std::string text = std::to_string(rows.size()) + " candidate(s):";
  bool first = true;
  for (int i = 0; i < kMarks; ++i)
    if (counts[i]) {
      text += std::string(first ? " " : ", ") + std::to_string(counts[i]) + " " + names[i];
      first = false;
    }
  return text;
}

std::string summary_of(const TuneView& view) {
  std::string text = count_text(view.rows);
  if (view.best) {
    const TrialRow& b = view.rows[*view.best];
    char value[64];
    std::snprintf(value, sizeof value, "%.2f", *b.metric);
    text += "; best trial " + std::to_string(b.trial) + " (" + b.name + "): " + value + " " + view.metric_header;
  }
  return text;
}

}  // namespace

TuneProgress load_tune_progress(const std::string& db, const std::string& run_uid) {
  TuneProgress progress;
  try {
    ss::Store store = open_read_only(db);
    for (const auto& run : ss::load_tune_runs(store))
      if (run_uid.empty() || run.uid == run_uid) {
        progress.run = run;
        break;
      }
    if (progress.run) progress.trials = ss::load_tune_trials(store, progress.run->uid);
  } catch (const ss::StoreError& e) {
    // Before the tuner's first commit the file, or its tune tables, may not be there yet.
    if (e.kind() != ss::ErrorKind::kNotFound) progress.error = e.what();
  } catch (const std::exception& e) {
    progress.error = e.what();
  }
  return progress;
}

std::vector<ss::TuneRunRecord> list_tune_runs(const std::string& db) {
  try {
    ss::Store store = open_read_only(db);
    return ss::load_tune_runs(store);
  } catch (const std::exception&) {
    return {};
  }
}

TrialMark trial_mark(const std::string& status) {
  if (status == "ok") return TrialMark::kOk;
  if (status == "pruned") return TrialMark::kPruned;
  if (status == "oom") return TrialMark::kOutOfMemory;
  if (status == "failed") return TrialMark::kFailed;
  if (status == "skipped") return TrialMark::kSkipped;
  return TrialMark::kRunning;
}

TuneView build_tune_view(const TuneProgress& progress) {
  TuneView view;
  if (progress.run) {
    view.run_uid = progress.run->uid;
    view.run_status = progress.run->status;
    read_request(*progress.run, view);
  }
  name_metric(view);
  for (const auto& t : progress.trials) view.rows.push_back(row_of(t));
  const auto order = tune::ranked_trials(progress.trials, view.metric);
  if (!order.empty()) {
    view.best = order.front();
    view.rows[order.front()].best = true;
  }
  for (std::size_t i = 0; i < view.rows.size(); ++i)
    view.points.push_back(point_of(view.rows[i], i, throughput_of(progress.trials[i], view.metric)));
  view.summary = summary_of(view);
  return view;
}

std::vector<SessionRef> trial_session_refs(const std::string& db, const std::vector<TrialRow>& rows) {
  for (const auto& r : rows)
    if (r.session_uid.empty())
      throw std::invalid_argument("trial " + std::to_string(r.trial) + " (" + r.name + ") is " + r.status +
                                  " and has no session to compare: choose trials that ran");
  ss::Store store = open_read_only(db);
  std::vector<SessionRef> refs;
  for (const auto& r : rows)
    refs.push_back({db, ss::find_session(store, r.session_uid), "#" + std::to_string(r.trial) + " " + r.name});
  return refs;
}

std::string matching_config_path(const TuneProgress& progress, std::size_t trial_index,
                                 const std::vector<std::string>& paths) {
  if (!progress.run || trial_index >= progress.trials.size()) return {};
  try {
    tune::Assignment assignment;
    const json params = json::parse(progress.trials[trial_index].params_json);
    for (const auto& [key, value] : params.items())
      assignment.emplace_back(key, value);
    const json expected = tune::candidate_config(json::parse(progress.run->request_json).at("config"), assignment);
    for (const auto& path : paths) {
      std::ifstream in(path);
      if (in && json::parse(in, nullptr, false, true) == expected) return path;
    }
  } catch (const json::exception&) {
    // A request or parameters this build cannot read: no file can be shown to match.
  }
  return {};
}

std::string trial_bytes_text(const std::optional<double>& bytes) { return bytes ? tune::gib_text(*bytes) : "-"; }

}  // namespace shardscope::gui
