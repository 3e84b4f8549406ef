#pragma once
// The Tune page's data without widgets: a tune run's rows as `shardscope tune` records them in the
// session store (sessions/tune_records.hpp), read read-only while the tuner writes them; the
// table's rows, the scatter's points (throughput against peak memory, the estimator's prediction
// beside each, pruned / out-of-memory / failed marked), the best trial as the tune report picks it
// (tune::ranked_trials), and the sessions of chosen trials for Sessions & Compare.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/sessions/compare_data.hpp"
#include "sessions/tune_records.hpp"

namespace shardscope::gui {

/// One read of a tune run: the run's record and its trials in trial order.
struct TuneProgress {
  std::optional<sessions::TuneRunRecord> run;
  std::vector<sessions::TuneTrialRecord> trials;
  std::string error;  ///< why the store could not be read (empty before the tuner created it)
};

/// Reads run `run_uid` (empty: the newest run) of the session store `db`, read-only (the tuner
/// keeps writing); never throws.
TuneProgress load_tune_progress(const std::string& db, const std::string& run_uid);
/// Every tune run of `db`, newest first; empty when the file holds none or cannot be read.
std::vector<sessions::TuneRunRecord> list_tune_runs(const std::string& db);

enum class TrialMark { kOk, kPruned, kOutOfMemory, kFailed, kRunning, kSkipped };
TrialMark trial_mark(const std::string& status);

struct TrialRow {
  std::int64_t trial = 0;
  std::string name;           ///< "z1 mb4 gas1"
  std::string params;         ///< the tuned keys and values, one "key = value" per line
  std::optional<double> predicted_bytes;
  std::optional<double> peak_bytes;
  std::optional<double> metric;  ///< only for a trial that ran to the end
  std::string status;         ///< ok, pruned, oom, failed, running
  TrialMark mark = TrialMark::kRunning;
  std::string message;        ///< the prune reason, the failure's last error line
  std::string session_uid;
  bool best = false;
};

/// A point of the scatter. A trial that ran to the end sits at (measured peak, throughput) with its
/// prediction at (predicted, throughput); one that has no throughput (pruned, out of memory, failed,
/// running) sits on the memory axis (y = 0) at its measured peak, else its prediction.
struct ScatterPoint {
  std::size_t row = 0;        ///< index into TuneView::rows
  double x_bytes = 0;
  double y = 0;
  std::optional<double> predicted_bytes;
  TrialMark mark = TrialMark::kRunning;
  bool best = false;
};

struct TuneView {
  std::string run_uid;
  std::string run_status;     ///< running, completed, stopped
  std::string metric;         ///< tokens_per_s, samples_per_s, step_time
  std::string metric_header;  ///< the table's column: "tokens/s", "samples/s", "step time (ms)"
  std::string throughput_label;  ///< the scatter's y axis: "tokens/s (all ranks)"
  std::vector<TrialRow> rows;
  std::optional<std::size_t> best;  ///< index into rows
  std::vector<ScatterPoint> points;
  std::optional<double> usable_bytes;  ///< the budget less the margin: pruning's line
  std::string summary;       ///< "9 candidates: 3 ok, 5 pruned, 1 out of memory; best trial 2 (z0 mb4) 1234 tokens/s"
};

/// The page's view of one read.
TuneView build_tune_view(const TuneProgress& progress);

/// The sessions of `rows` (trials that were launched) in `db`, for Sessions & Compare; throws
/// std::invalid_argument naming a trial that has no session (pruned, or not started).
std::vector<SessionRef> trial_session_refs(const std::string& db, const std::vector<TrialRow>& rows);

/// The first of `paths` that holds trial `trial_index`'s config as the tuner wrote it (the run's
/// config with the trial's values set, tune::candidate_config), or "" when none does: a later run
/// into the same folder replaces ds_config.json and the trial files, so a path alone proves nothing.
std::string matching_config_path(const TuneProgress& progress, std::size_t trial_index,
                                 const std::vector<std::string>& paths);

/// "12.3 MiB" / "1.234 GiB", as the CLI's table writes bytes.
std::string trial_bytes_text(const std::optional<double>& bytes);

}  // namespace shardscope::gui
