#pragma once
// The Sessions & Compare page's Verdict and Trend tabs as plain data, computed off the GUI thread
// by the sessions library's own check_regression and metric_trend (what `shardscope sessions
// check` and `sessions trend` print; no second implementation here), then laid out as rows: the
// text of each cell, its number, and the verdict that colours it. Qt-free, so a test reaches every
// value without a widget; the models and the chart only show these rows.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/sessions/compare_data.hpp"
#include "profiler/profile_selection.hpp"
#include "sessions/regression_check.hpp"
#include "sessions/regression_trend.hpp"

namespace shardscope::gui {

/// How a row reads at a glance: its verdict, or a default that flipped between DeepSpeed releases.
enum class RowTone { kPlain, kRegression, kImprovement, kWithinThreshold, kWithinNoise, kDefaultFlip };

/// The tone of a check's verdict, in the table and the charts alike.
RowTone verdict_tone(sessions::Verdict verdict);

struct TableCell {
  std::string text;
  std::optional<double> value;  ///< the number behind the text (sorting, tests); unset for text
};

struct TableRow {
  std::vector<TableCell> cells;
  RowTone tone = RowTone::kPlain;
  std::string tooltip;  ///< how the row was computed (statistic, samples, block length, ...)
};

struct TextTable {
  std::vector<std::string> headers;
  std::vector<TableRow> rows;
};

/// Which compared sessions stand on which side of a check (indexes into the compared sessions).
struct VerdictGroups {
  std::vector<std::size_t> baseline, candidate;
  std::string label;  ///< "beta #2 vs alpha #1 (baseline)", "repeats by config: 2 vs 2"
};

/// The ways to split the compared sessions (the first the baseline): the first against each other
/// one, then, where the sessions hold exactly two resolved configs (`config_hashes`, one per
/// session), the repeats of the first's config against those of the other. Empty below 2 sessions.
std::vector<VerdictGroups> verdict_group_choices(const std::vector<SessionRef>& refs,
                                                 const std::vector<std::string>& config_hashes);

struct VerdictRequest {
  std::vector<SessionRef> baseline, candidate;
  std::string fail_on;             ///< --fail-on text; "" applies the documented defaults
  std::int64_t warmup_steps = -1;  ///< < 0: the check's default, max(2, 10 %) of each run
};

/// `shardscope sessions check --db FILE --baseline IDS --candidate IDS [--fail-on ...] [--warmup N]`.
std::string verdict_cli_command(const VerdictRequest& request);

struct VerdictView {
  VerdictRequest request;
  sessions::RegressionReport report;  ///< check_regression's answer, as it is
  TextTable metrics;       ///< metric, baseline, candidate, change, 95 % interval, threshold, verdict
  TextTable contributors;  ///< kind, name, baseline, candidate, delta (ms per step), of step, share of change
  TextTable changes;       ///< kind, path, a column per session, note
  std::string headline;    ///< the CLI's closing lines (one per failing metric, "\n" between): "FAILED: ..." or "OK: ..."
  std::string cli;         ///< verdict_cli_command(request)
  std::string error;       ///< set instead of the rest when the check refused the input
};

/// Runs check_regression on the request's sessions (one file) and lays its report out. Never
/// throws: a bad --fail-on, sessions of two files or of different models land in `error`.
VerdictView compute_verdict(const VerdictRequest& request);

/// A metric's value as the CLI prints it: bytes in GiB/MiB, fractions as percent, else 5 digits.
std::string verdict_value_text(double value, const std::string& unit);
/// "+6.02%" from 0.0602.
std::string signed_percent(double fraction);
/// "regression", "REGRESSION" when it gates, "within noise", ...
std::string verdict_text(sessions::Verdict verdict, bool gating);

/// Where a contributor lives in a session's profile: the selection that narrows the profile view to
/// it (a kernel family's longest kernel, a collective's op, none for a phase) and the pane to show.
struct ProfileTarget {
  profiler::ProfileSelection selection;
  std::string pane;  ///< "Top kernels", "Collectives", "Phases"
  std::string note;  ///< why nothing is selected ("no kernel of family gemm in this session"), or ""
};
ProfileTarget profile_target(const sessions::Contributor& contributor, const profiler::ProfileRecords& records);

struct TrendRequest {
  std::string file;
  std::string metric = "step_time";
  sessions::TrendGrouping grouping = sessions::TrendGrouping::kTag;
  std::string tag;                 ///< only sessions with this tag ("" = all)
  std::string name_contains;       ///< only sessions whose name holds this
  std::int64_t warmup_steps = -1;  ///< as VerdictRequest
};

/// `shardscope sessions trend METRIC --db FILE --by ... [--tag T] [--name N] [--warmup N]`.
std::string trend_cli_command(const TrendRequest& request);

struct TrendView {
  TrendRequest request;
  sessions::TrendReport report;  ///< metric_trend's answer, as it is
  TextTable groups;              ///< group, sessions, value, 95 % interval, vs previous, 95 % interval, verdict
  std::string axis_title;        ///< "step_time (ms)", "peak_memory (GiB)"
  double axis_scale = 1;         ///< divides the report's values for the chart (bytes to GiB, fraction to %)
  std::string cli;
  std::string error;
};

/// Runs metric_trend over the file's sessions; never throws (errors land in `error`).
TrendView compute_trend(const TrendRequest& request);

/// The metrics a trend can follow: the documented ones, then the phases and collectives `report`
/// compared (phase:forward, comm:all_reduce), when there is one.
std::vector<std::string> trend_metric_choices(const sessions::RegressionReport* report);

}  // namespace shardscope::gui
