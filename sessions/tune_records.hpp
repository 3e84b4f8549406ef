#pragma once
// `shardscope tune`'s records in a session store (schema 8, docs/tune.md): one TuneRunRecord per
// tune run and one TuneTrialRecord per candidate it decided on. Each write is one transaction, so
// a tuner killed with SIGKILL leaves every finished trial whole and at most one row 'running'.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::sessions {

class Store;

struct TuneRunRecord {
  std::string uid;
  double created_at = 0;
  std::string fingerprint;   ///< what a --resume must match: config, space, tuner, metric, train args
  std::string request_json;  ///< the request as JSON, for reports and the GUI
  std::string status = "running";  ///< running, completed, stopped
  std::optional<double> ended_at;
};

struct TuneTrialRecord {
  std::string run_uid;
  std::string candidate_key;  ///< canonical JSON of the tuned values: the trial's identity
  std::int64_t trial = 0;     ///< order in which the tuner decided on it, from 1
  std::string name;           ///< also the name of its session
  std::string params_json;
  std::string status;         ///< running, ok, pruned, oom, failed
  std::optional<double> predicted_bytes;
  std::optional<std::int64_t> measured_peak_bytes;
  std::optional<double> metric_value;
  std::optional<double> tokens_per_s;
  std::optional<double> samples_per_s;
  std::optional<double> step_time_ms;
  std::string session_uid;
  std::optional<std::int64_t> exit_code;
  std::string message;
  std::optional<double> started_at;
  std::optional<double> ended_at;
  /// True once the trial reached a final status (anything but running).
  bool finished() const { return status != "running"; }
};

/// Inserts a new tune run; throws StoreError(kInvalidArgument) when its uid exists.
void insert_tune_run(Store& store, const TuneRunRecord& run);
/// Sets a run's status and end time.
void finish_tune_run(Store& store, const std::string& uid, const std::string& status, double ended_at);
/// Every tune run of the store, newest first.
std::vector<TuneRunRecord> load_tune_runs(Store& store);
/// Inserts or replaces the trial (run_uid, candidate_key).
void put_tune_trial(Store& store, const TuneTrialRecord& trial);
/// The trials of one run in trial order.
std::vector<TuneTrialRecord> load_tune_trials(Store& store, const std::string& run_uid);

}  // namespace shardscope::sessions
