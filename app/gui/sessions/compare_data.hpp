#pragma once
// What the Sessions & Compare page shows, as plain data computed off the GUI thread: the sessions
// of several files, a comparison of 1 to 8 of them (the sessions library's compare_sessions when
// 2 or more share a file, the same pieces composed otherwise), and plot-ready curves (smoothed
// with the library's smoothing, then downsampled).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/common/series_downsampling.hpp"
#include "sessions/rank_bands.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::gui {

/// One session of one file.
struct SessionRef {
  std::string file;
  std::int64_t id = 0;
  std::string label;  ///< shown in legends and table headers
};

struct CatalogRow {
  std::string file;
  sessions::SessionInfo info;
  std::vector<sessions::SessionHost> hosts;  ///< sessions::load_session_hosts, in node order
};

/// Sessions of every file, newest first per file; unreadable files, and damaged ones (listed
/// read-only as far as they can be read), are named in `errors`.
struct Catalog {
  std::vector<CatalogRow> rows;
  std::vector<std::string> errors;
};

/// Lists the sessions of each file (opened read-only; a writer may be running).
Catalog load_catalog(const std::vector<std::string>& files);

/// One metric of every compared session at full resolution (present steps only).
struct RawCurve {
  std::string metric;             ///< metric_name() or "timer:<name>"
  std::vector<Series> sessions;   ///< one per compared session, in order
  std::string note;               ///< shown on the chart: why it is not what its title says
};

/// A many-rank session's spread across ranks per step, by metric name (its curve is the median).
struct SessionBands {
  int ranks = 0;  ///< the session's ranks; bands are read above kBandsAboveRanks (rank_band_chart.hpp)
  std::map<std::string, std::shared_ptr<const std::vector<sessions::RankBand>>> by_metric;
  std::map<int, std::string> hosts;  ///< rank -> host, for naming the ranks at a band's ends
};

struct Comparison {
  std::vector<SessionRef> sessions;
  std::vector<sessions::SessionSummary> summaries;
  std::vector<RawCurve> curves;
  std::vector<sessions::SummaryDelta> summary;
  std::vector<sessions::DiffRow> config_diff;       ///< every path; DiffRow::differs marks changes
  std::vector<sessions::DiffRow> environment_diff;
  std::vector<sessions::DiffRow> run_diff;          ///< command lines, their flags, ranks, hosts
  /// Each session's run-doctor findings, as `sessions show` lists them (diagnosis::review_stored_session).
  std::vector<std::vector<sessions::Finding>> findings;
  std::vector<std::string> findings_errors;  ///< "label: why" for a session whose findings could not be read
  /// Per session its bands (empty by_metric for a session of a handful of ranks).
  std::vector<SessionBands> bands;
  bool same_file = false;  ///< computed by sessions::compare_sessions itself
  std::string error;       ///< set instead of the rest when the comparison failed
};

/// The metrics the compare page overlays, in display order.
const std::vector<sessions::Metric>& compared_metrics();

/// Compares `refs` in order (the first is the baseline); one session is shown on its own (its
/// curves, summary, run, config and environment, no deltas). Never throws (errors land in `error`).
/// `with_findings` false leaves `findings` to read_findings (the page reads them after drawing the
/// curves: the doctor's review of a 1,024-rank session takes seconds).
Comparison compare_refs(const std::vector<SessionRef>& refs, std::int64_t warmup_steps = 0, bool with_findings = true);
/// Fills `out.findings` (and `findings_errors`) for `out.sessions`. Never throws.
void read_findings(Comparison& out);

struct PlotOptions {
  sessions::Smoothing smoothing;
  std::size_t buckets = 1000;  ///< min/max buckets per curve (about one per pixel column)
};

/// One curve ready to draw: raw and smoothed series per session, both downsampled.
struct PlotCurve {
  std::string metric;
  std::vector<Series> raw;
  std::vector<Series> smoothed;  ///< empty series when smoothing is off
  std::string note;              ///< RawCurve::note
};

/// Smooths each session's full-resolution series (sessions::smooth), then downsamples.
std::vector<PlotCurve> make_plot_curves(const std::vector<RawCurve>& curves, const PlotOptions& options);

}  // namespace shardscope::gui
