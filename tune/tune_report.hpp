#pragma once
// What a tune run leaves behind: the results table, the best config as a ready ds_config.json
// (only the tuned keys differ from the user's file) and tune_report.md (why it won, what the
// runner-up costs). docs/tune.md, "Outputs".

#include <string>
#include <vector>

#include "sessions/tune_records.hpp"

namespace shardscope::tune {

struct TuneRequest;
struct TuneOutcome;

/// The results table: trial, parameters, predicted memory, measured peak, metric, status.
std::string format_results_table(const std::vector<sessions::TuneTrialRecord>& trials, const std::string& metric);

/// Indices of the trials that ran to the end (ok, with a metric), best first: highest throughput,
/// or lowest step_time. The report's best and runner-up, and the GUI's highlighted point.
std::vector<std::size_t> ranked_trials(const std::vector<sessions::TuneTrialRecord>& trials, const std::string& metric);

/// Sets outcome.best and runner_up from the trials and writes ds_config.json and tune_report.md
/// into request.out_dir (atomically); with no ok trial it writes the report only.
void write_tune_outputs(const TuneRequest& request, TuneOutcome& outcome);

}  // namespace shardscope::tune
