#include "app/gui/sessions/compare_data.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "app/gui/common/rank_band_chart.hpp"
#include "diagnosis/stored_session.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/display_text.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;
using Leaves = std::vector<std::pair<std::string, std::string>>;

ss::Store open_reader(const std::string& file) {
  ss::StoreOpenOptions options;
  options.read_only = true;
  return ss::Store::open(file, options);
}

Series series_of(const std::vector<std::int64_t>& steps, const std::vector<std::optional<double>>& values) {
  Series s;
  for (std::size_t i = 0; i < steps.size() && i < values.size(); ++i)
    if (values[i]) {
      s.x.push_back(static_cast<double>(steps[i]));
      s.y.push_back(*values[i]);
    }
  return s;
}

Series series_of(const std::vector<ss::CurvePoint>& points) {
  Series s;
  for (const auto& p : points) {
    s.x.push_back(static_cast<double>(p.step));
    s.y.push_back(p.value);
  }
  return s;
}

void compare_in_one_file(const std::vector<SessionRef>& refs, std::int64_t warmup, Comparison& out) {
  ss::Store store = open_reader(refs.front().file);
  std::vector<std::int64_t> ids;
  for (const auto& r : refs) ids.push_back(r.id);
  ss::CompareOptions options;
  options.metrics = compared_metrics();
  options.metrics.push_back(ss::Metric::kSamplesPerS);  // the throughput of runs without tokens/s
  options.diff_only = false;  // the page filters with its "differences only" switch
  options.summary.warmup_steps = warmup;
  ss::SessionComparison c = ss::compare_sessions(store, ids, options);
  out.summaries = std::move(c.sessions);
  out.summary = std::move(c.summary);
  out.config_diff = std::move(c.config_diff);
  out.environment_diff = std::move(c.environment_diff);
  out.run_diff = std::move(c.run_diff);
  for (const auto& curve : c.curves) {
    RawCurve raw{curve.metric, {}, {}};
    for (const auto& values : curve.values) raw.sessions.push_back(series_of(curve.steps, values));
    out.curves.push_back(std::move(raw));
  }
  out.same_file = true;
}

void compare_across_files(const std::vector<SessionRef>& refs, std::int64_t warmup, Comparison& out) {
  std::map<std::string, std::unique_ptr<ss::Store>> stores;
  for (const auto& r : refs)
    if (!stores.count(r.file)) stores[r.file] = std::make_unique<ss::Store>(open_reader(r.file));
  std::vector<Leaves> configs, environments, runs;
  std::set<std::string> timers;
  ss::SummaryOptions summary_options;
  summary_options.warmup_steps = warmup;
  for (const auto& r : refs) {
    ss::Store& store = *stores[r.file];
    const ss::SessionDetail detail = ss::load_session(store, r.id);
    out.summaries.push_back(ss::summarize_session(store, r.id, summary_options));
    configs.push_back(detail.config_json.empty() ? Leaves{} : ss::flatten_json_text(detail.config_json));
    environments.push_back(ss::environment_leaves(detail));
    runs.push_back(ss::run_leaves(detail));
    for (auto& name : ss::load_timer_names(store, r.id)) timers.insert(name);
  }
  std::vector<ss::Metric> metrics = compared_metrics();
  metrics.push_back(ss::Metric::kSamplesPerS);  // the throughput of runs without tokens/s
  for (auto metric : metrics) {
    RawCurve raw{ss::metric_name(metric), {}, {}};
    for (const auto& r : refs) raw.sessions.push_back(series_of(ss::load_curve(*stores[r.file], r.id, metric)));
    out.curves.push_back(std::move(raw));
  }
  for (const auto& name : timers) {
    RawCurve raw{"timer:" + name, {}, {}};
    for (const auto& r : refs) raw.sessions.push_back(series_of(ss::load_timer_curve(*stores[r.file], r.id, name)));
    out.curves.push_back(std::move(raw));
  }
  out.summary = ss::summary_deltas(out.summaries);
  out.config_diff = ss::diff_documents(configs, false);
  out.environment_diff = ss::diff_documents(environments, false);
  out.run_diff = ss::diff_documents(runs, false);
}

// Opens a session file for the catalog: read-only, with quick_check. A file of an older ShardScope
// cannot be read so; it is upgraded in place, as every CLI command does on open, and then read.
ss::Store open_for_catalog(const std::string& file) {
  ss::StoreOpenOptions options;
  options.read_only = true;
  options.integrity = ss::IntegrityCheck::kWarn;
  try {
    return ss::Store::open(file, options);
  } catch (const std::exception& read_only_error) {
    options.read_only = false;
    options.create_if_missing = false;
    try {
      return ss::Store::open(file, options);  // migrates an older schema; a damaged file stays read-only
    } catch (const std::exception&) {
      throw std::runtime_error(read_only_error.what());  // the first reason says what is wrong
    }
  }
}

// Sessions with samples/s and no tokens/s (an imported or watched DeepSpeed run: its
// ThroughputTimer line gives CurrSamplesPerSec, no sequence length) have their samples/s in the
// throughput chart, named so. One chart has one unit: when such a session is compared with ones
// that have tokens/s, the chart shows every session's samples/s (the engine records both) and
// says which sessions have no tokens/s, rather than leave the DeepSpeed run out unsaid. The extra
// samples/s curve goes either way.
void throughput_as_samples(std::vector<RawCurve>& curves, const std::vector<SessionRef>& refs) {
  const auto by_name = [&](const char* name) {
    return std::find_if(curves.begin(), curves.end(), [name](const RawCurve& c) { return c.metric == name; });
  };
  const auto samples = by_name("samples_per_s");
  if (samples == curves.end()) return;
  const auto tokens = by_name("tokens_per_s");
  std::vector<std::string> samples_only;
  bool some_tokens = false;
  for (std::size_t s = 0; tokens != curves.end() && s < tokens->sessions.size(); ++s) {
    const bool has_tokens = !tokens->sessions[s].x.empty();
    some_tokens = some_tokens || has_tokens;
    if (!has_tokens && s < samples->sessions.size() && !samples->sessions[s].x.empty() && s < refs.size())
      samples_only.push_back(refs[s].label);
  }
  if (tokens != curves.end() && !samples_only.empty()) {
    *tokens = std::move(*samples);
    if (some_tokens) {
      // One name a line: the note is drawn on a chart a quarter of the page wide.
      tokens->note = "samples/s: no tokens/s in";
      for (const auto& name : samples_only) tokens->note += "\n" + name;
    }
  }
  curves.erase(samples);  // moved into the throughput slot or not wanted: no chart of its own
}

}  // namespace

Catalog load_catalog(const std::vector<std::string>& files) {
  Catalog catalog;
  for (const auto& file : files) {
    try {
      // Where the GUI opens a session file: quick_check first; a damaged file is still listed,
      // read-only, with the damage named. Names come from the file and are shown escaped.
      ss::Store store = open_for_catalog(file);
      if (const std::string warning = ss::damage_warning(store); !warning.empty())
        catalog.errors.push_back("warning: " + ss::escape_control_characters(warning));
      for (auto& info : ss::list_sessions(store)) {
        info.name = ss::escape_control_characters(info.name);
        auto hosts = ss::load_session_hosts(store, info.id);
        for (auto& host : hosts) host.host = ss::escape_control_characters(host.host);
        catalog.rows.push_back({file, std::move(info), std::move(hosts)});
      }
    } catch (const std::exception& e) {
      catalog.errors.push_back(file + ": " + ss::escape_control_characters(e.what()));
    }
  }
  return catalog;
}

// The doctor's findings of each compared session, each file opened once as the comparison opened
// it; a session whose findings cannot be read has none, and the reason is kept for the tab.
void read_findings(Comparison& out) {
  out.findings.clear();
  out.findings_errors.clear();
  std::map<std::string, std::unique_ptr<ss::Store>> stores;
  for (const auto& ref : out.sessions) {
    out.findings.emplace_back();
    try {
      auto& store = stores[ref.file];
      if (!store) store = std::make_unique<ss::Store>(open_reader(ref.file));
      out.findings.back() = diagnosis::review_stored_session(*store, ref.id, ss::load_session(*store, ref.id));
    } catch (const std::exception& e) {
      out.findings_errors.push_back(ref.label + ": " + ss::escape_control_characters(e.what()));
    }
  }
}

// A session of many ranks: each charted metric's band across ranks, read in one pass over its steps
// (sessions::load_step_bands), and its curve becomes the median, so smoothing applies to what is
// drawn as the line; the chart says what the line and the band are.
void add_bands(Comparison& out) {
  std::map<std::string, std::unique_ptr<ss::Store>> stores;
  bool any = false;
  for (std::size_t s = 0; s < out.sessions.size(); ++s) {
    const SessionRef& ref = out.sessions[s];
    auto& store = stores[ref.file];
    if (!store) store = std::make_unique<ss::Store>(open_reader(ref.file));
    SessionBands bands;
    bands.ranks = static_cast<int>(ss::load_rank_ids(*store, ref.id).size());
    if (bands.ranks > kBandsAboveRanks) {
      std::vector<ss::Metric> metrics;
      std::vector<std::size_t> curve_of;  // the curve each metric's bands belong to
      for (std::size_t c = 0; c < out.curves.size(); ++c)
        if (out.curves[c].metric.rfind("timer:", 0) != 0) {
          metrics.push_back(ss::metric_from_name(out.curves[c].metric));
          curve_of.push_back(c);
        }
      auto read = ss::load_step_bands(*store, ref.id, metrics);
      for (const auto& r : ss::load_session(*store, ref.id).ranks)
        if (!r.info.host.empty()) bands.hosts[r.info.rank] = ss::escape_control_characters(r.info.host);
      for (std::size_t m = 0; m < metrics.size(); ++m) {
        RawCurve& curve = out.curves[curve_of[m]];
        Series median;
        for (const auto& b : read[m]) median.x.push_back(double(b.step)), median.y.push_back(b.median);
        if (s < curve.sessions.size()) curve.sessions[s] = std::move(median);
        bands.by_metric[curve.metric] = std::make_shared<const std::vector<ss::RankBand>>(std::move(read[m]));
      }
      any = true;
    }
    out.bands.push_back(std::move(bands));
  }
  if (!any) return;
  for (auto& curve : out.curves)
    if (curve.note.empty() && curve.metric.rfind("timer:", 0) != 0) curve.note = "line: median of the ranks, band: min-max";
}

const std::vector<ss::Metric>& compared_metrics() {
  static const std::vector<ss::Metric> metrics = {
      ss::Metric::kLoss,       ss::Metric::kLr,     ss::Metric::kLossScale, ss::Metric::kGradNorm,
      ss::Metric::kTokensPerS, ss::Metric::kTflops, ss::Metric::kMemPeak,   ss::Metric::kStepTime};
  return metrics;
}

Comparison compare_refs(const std::vector<SessionRef>& refs, std::int64_t warmup_steps, bool with_findings) {
  Comparison out;
  out.sessions = refs;
  try {
    if (refs.empty() || refs.size() > ss::kMaxCompared)
      throw std::invalid_argument("select 1 to 8 sessions to compare (" + std::to_string(refs.size()) + " selected)");
    bool one_file = refs.size() >= ss::kMinCompared;  // the library compares 2 or more
    for (const auto& r : refs) one_file = one_file && r.file == refs.front().file;
    if (one_file)
      compare_in_one_file(refs, warmup_steps, out);
    else
      compare_across_files(refs, warmup_steps, out);
    add_bands(out);  // before throughput_as_samples moves samples/s into the throughput slot
    throughput_as_samples(out.curves, out.sessions);
    if (with_findings) read_findings(out);
  } catch (const std::exception& e) {
    Comparison failed;
    failed.sessions = refs;
    failed.error = e.what();
    return failed;
  }
  return out;
}

std::vector<PlotCurve> make_plot_curves(const std::vector<RawCurve>& curves, const PlotOptions& options) {
  std::vector<PlotCurve> out;
  for (const auto& curve : curves) {
    PlotCurve plot{curve.metric, {}, {}, curve.note};
    for (const auto& s : curve.sessions) {
      plot.raw.push_back(downsample_min_max(s, options.buckets));
      Series smoothed;
      if (options.smoothing.kind != ss::SmoothingKind::kNone && !s.x.empty()) {
        smoothed.x = s.x;
        smoothed.y = ss::smooth(s.x, s.y, options.smoothing);
        smoothed = downsample_lttb(smoothed, 2 * options.buckets);
      }
      plot.smoothed.push_back(std::move(smoothed));
    }
    out.push_back(std::move(plot));
  }
  return out;
}

}  // namespace shardscope::gui
