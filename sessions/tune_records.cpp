#include "sessions/tune_records.hpp"

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

Statement& bind_text_or_null(Statement& s, int index, const std::string& text) {
  return text.empty() ? s.bind_null(index) : s.bind(index, text);
}

TuneTrialRecord read_trial(const Statement& s) {
  TuneTrialRecord t;
  t.run_uid = s.text(0);
  t.candidate_key = s.text(1);
  t.trial = s.int64(2);
  t.name = s.text(3);
  t.params_json = s.text(4);
  t.status = s.text(5);
  t.predicted_bytes = s.optional_real(6);
  t.measured_peak_bytes = s.optional_int64(7);
  t.metric_value = s.optional_real(8);
  t.tokens_per_s = s.optional_real(9);
  t.samples_per_s = s.optional_real(10);
  t.step_time_ms = s.optional_real(11);
  t.session_uid = s.is_null(12) ? "" : s.text(12);
  t.exit_code = s.optional_int64(13);
  t.message = s.is_null(14) ? "" : s.text(14);
  t.started_at = s.optional_real(15);
  t.ended_at = s.optional_real(16);
  return t;
}

}  // namespace

void insert_tune_run(Store& store, const TuneRunRecord& run) {
  Transaction transaction(store.db());
  Statement exists(store.db(), "SELECT 1 FROM tune_runs WHERE uid = ?");
  exists.bind(1, run.uid);
  if (exists.step()) throw StoreError(ErrorKind::kInvalidArgument, "tune run " + run.uid + " already exists in " + store.path());
  Statement put(store.db(), "INSERT INTO tune_runs(uid, created_at, fingerprint, request_json, status, ended_at) "
                            "VALUES(?, ?, ?, ?, ?, ?)");
  put.bind(1, run.uid).bind(2, run.created_at).bind(3, run.fingerprint).bind(4, run.request_json).bind(5, run.status)
      .bind(6, run.ended_at).run();
  transaction.commit();
}

void finish_tune_run(Store& store, const std::string& uid, const std::string& status, double ended_at) {
  Transaction transaction(store.db());
  Statement put(store.db(), "UPDATE tune_runs SET status = ?, ended_at = ? WHERE uid = ?");
  put.bind(1, status).bind(2, ended_at).bind(3, uid).run();
  transaction.commit();
}

std::vector<TuneRunRecord> load_tune_runs(Store& store) {
  Statement s(store.db(), "SELECT uid, created_at, fingerprint, request_json, status, ended_at FROM tune_runs "
                          "ORDER BY created_at DESC, uid DESC");
  std::vector<TuneRunRecord> runs;
  while (s.step()) {
    TuneRunRecord r;
    r.uid = s.text(0);
    r.created_at = s.real(1);
    r.fingerprint = s.text(2);
    r.request_json = s.text(3);
    r.status = s.text(4);
    r.ended_at = s.optional_real(5);
    runs.push_back(std::move(r));
  }
  return runs;
}

void put_tune_trial(Store& store, const TuneTrialRecord& t) {
  Transaction transaction(store.db());
  Statement put(store.db(),
                "INSERT OR REPLACE INTO tune_trials(run_uid, candidate_key, trial, name, params_json, status, "
                "predicted_bytes, measured_peak_bytes, metric_value, tokens_per_s, samples_per_s, step_time_ms, "
                "session_uid, exit_code, message, started_at, ended_at) "
                "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  put.bind(1, t.run_uid).bind(2, t.candidate_key).bind(3, t.trial).bind(4, t.name).bind(5, t.params_json)
      .bind(6, t.status).bind(7, t.predicted_bytes).bind(8, t.measured_peak_bytes).bind(9, t.metric_value)
      .bind(10, t.tokens_per_s).bind(11, t.samples_per_s).bind(12, t.step_time_ms);
  bind_text_or_null(put, 13, t.session_uid).bind(14, t.exit_code);
  bind_text_or_null(put, 15, t.message).bind(16, t.started_at).bind(17, t.ended_at).run();
  transaction.commit();
}

std::vector<TuneTrialRecord> load_tune_trials(Store& store, const std::string& run_uid) {
  Statement s(store.db(), "SELECT run_uid, candidate_key, trial, name, params_json, status, predicted_bytes, "
                          "measured_peak_bytes, metric_value, tokens_per_s, samples_per_s, step_time_ms, session_uid, "
                          "exit_code, message, started_at, ended_at FROM tune_trials WHERE run_uid = ? ORDER BY trial");
  s.bind(1, run_uid);
  std::vector<TuneTrialRecord> trials;
  while (s.step()) trials.push_back(read_trial(s));
  return trials;
}

}  // namespace shardscope::sessions
