// run_tune: the loop of decide, launch, measure, record; resumable from the store.
#include "tune/tune_run.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>

#include "sessions/atomic_output.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/session_labels.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/sha256.hpp"
#include "sessions/store.hpp"
#include "tune/candidate_config.hpp"
#include "tune/dominance.hpp"
#include "tune/trial_runner.hpp"
#include "tune/tune_error.hpp"
#include "tune/tune_report.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json request_json(const TuneRequest& r) {
  json space = json::array();
  for (const auto& d : r.space_flags) space.push_back({{"key", d.key}, {"values", d.values}});
  return {{"config_path", r.config_path}, {"config", r.user_config}, {"world_size", r.world_size},
          {"launch_flags", r.launch_flags}, {"train_args", r.train_args}, {"space", space},
          {"metric", tune_metric_name(r.metric)}, {"tuner", tuner_type_name(r.tuner)},
          {"profile_steps", {r.start_profile_step, r.end_profile_step}}, {"seed", r.seed},
          {"memory_budget_bytes", r.memory.bytes}, {"memory_margin", r.memory.margin}};
}

// What a resumed run must share with the killed one: the same candidates, measured the same way.
std::string fingerprint(const TuneRequest& r) {
  json j = request_json(r);
  j.erase("config_path");
  if (!r.skip_dominated) j["try_dominated"] = true;  // absent by default: older runs keep their prints
  return sessions::digest_hex(sessions::sha256(j.dump()));
}

std::string write_candidate_file(const TuneRequest& r, std::int64_t trial, const json& config) {
  fs::create_directories(r.exps_dir);
  char name[32];
  std::snprintf(name, sizeof name, "trial_%03lld.json", static_cast<long long>(trial));
  const std::string path = (fs::path(r.exps_dir) / name).string();
  sessions::AtomicOutput out(path);
  out.stream() << config.dump(2) << "\n";
  out.commit();
  return path;
}

// The score the tuner maximises: throughput as it is, step time negated.
std::optional<double> score_of(const sessions::TuneTrialRecord& t, TuneMetric metric) {
  if (t.status != "ok" || !t.metric_value) return std::nullopt;
  return metric == TuneMetric::kStepTime ? -*t.metric_value : *t.metric_value;
}

bool improves(double score, std::optional<double> best, double min_improvement) {
  if (!best) return true;
  return score > *best + std::fabs(*best) * min_improvement;
}

struct RunState {
  std::vector<TuneCandidate> candidates;
  std::vector<std::size_t> runnable;              // indices into candidates, tuner order space
  std::vector<std::vector<std::size_t>> dominating;  // per runnable: its dominating siblings, runnable indices
  std::map<std::string, sessions::TuneTrialRecord> rows;  // by candidate key
  std::int64_t next_trial_number = 1;
};

sessions::TuneRunRecord find_or_start_run(sessions::Store& store, const TuneRequest& r, std::ostream& log) {
  const std::string print = fingerprint(r);
  if (r.resume) {
    for (const auto& run : sessions::load_tune_runs(store))
      if (run.fingerprint == print) {
        log << "shardscope tune: resuming tune run " << run.uid << " of " << store.path() << "\n";
        return run;
      }
    throw TuneError("--resume: " + store.path() + " holds no tune run of this config, space, tuner and metric (" +
                    std::to_string(sessions::load_tune_runs(store).size()) +
                    " other run(s)); run the same command that started it, or leave out --resume to start anew");
  }
  sessions::TuneRunRecord run;
  run.uid = sessions::hex_encode(sessions::random_bytes(8));
  run.created_at = now_s();
  run.fingerprint = print;
  run.request_json = request_json(r).dump();
  sessions::insert_tune_run(store, run);
  log << "shardscope tune: tune run " << run.uid << " in " << store.path() << "\n";
  return run;
}

sessions::TuneTrialRecord new_row(const std::string& run_uid, const TuneCandidate& c, std::int64_t trial) {
  sessions::TuneTrialRecord t;
  t.run_uid = run_uid;
  t.candidate_key = assignment_key(c.assignment);
  t.trial = trial;
  t.name = assignment_name(c.assignment);
  t.params_json = assignment_json(c.assignment).dump();
  t.predicted_bytes = c.predicted_bytes > 0 ? std::optional<double>(c.predicted_bytes) : std::nullopt;
  return t;
}

void record_pruned(sessions::Store& store, const std::string& run_uid, RunState& s, std::ostream& log) {
  std::size_t pruned = 0;
  for (std::size_t i = 0; i < s.candidates.size(); ++i) {
    const auto& c = s.candidates[i];
    const std::string key = assignment_key(c.assignment);
    if (c.prune_reason.empty()) {
      s.runnable.push_back(i);
      continue;
    }
    ++pruned;
    if (s.rows.count(key)) continue;  // recorded before the kill
    auto t = new_row(run_uid, c, s.next_trial_number++);
    t.status = "pruned";
    t.message = c.prune_reason;
    t.started_at = t.ended_at = now_s();
    sessions::put_tune_trial(store, t);
    s.rows[key] = t;
  }
  log << "shardscope tune: " << s.candidates.size() << " candidate(s): " << pruned << " pruned by the estimator, "
      << s.runnable.size() << " to try\n";
}

// The trial's session: the newest of its name started after the trial itself.
std::optional<std::int64_t> trial_session(sessions::Store& store, const std::string& name, double started_at) {
  sessions::SessionFilter f;
  f.name_contains = name;
  f.started_after = started_at - 1;
  for (const auto& info : sessions::list_sessions(store, f))
    if (info.name == name) return info.id;
  return std::nullopt;
}

void measure_session(sessions::Store& store, std::int64_t id, const TuneRequest& r, sessions::TuneTrialRecord& t) {
  sessions::SummaryOptions o;
  o.warmup_steps = r.start_profile_step - 1;  // DeepSpeed's start_profile_step is the first step measured
  const auto s = sessions::summarize_session(store, id, o);
  t.session_uid = s.info.uid;
  t.tokens_per_s = s.tokens_per_s;
  t.samples_per_s = s.samples_per_s;
  t.step_time_ms = s.median_step_ms;
  for (const auto& m : s.memory)
    if (m.peak_bytes && (!t.measured_peak_bytes || *m.peak_bytes > *t.measured_peak_bytes)) t.measured_peak_bytes = m.peak_bytes;
  t.metric_value = r.metric == TuneMetric::kTokensPerS ? s.tokens_per_s
                   : r.metric == TuneMetric::kSamplesPerS ? s.samples_per_s : s.median_step_ms;
  sessions::edit_session_tags(store, id, {"tune:" + t.run_uid, "tune-trial:" + std::to_string(t.trial)}, {});
}

void classify(const TrialProcessResult& p, sessions::TuneTrialRecord& t) {
  t.exit_code = p.exit_code;
  if (p.exit_code == 0 && t.metric_value) {
    t.status = "ok";
    return;
  }
  t.status = p.out_of_memory ? "oom" : "failed";
  if (p.timed_out) t.message = "timed out (--trial-timeout); ";
  else if (p.exit_code == 0) t.message = "ended without a measured step after warm-up; ";
  t.message += p.last_error.empty() ? "exit code " + std::to_string(p.exit_code) : p.last_error;
}

std::vector<std::string> trial_train_args(const TuneRequest& r, const TuneCandidate& c) {
  std::vector<std::string> args = r.train_args;
  // autotuning.arg_mappings: the training script takes these keys' values as flags too.
  for (const auto& [key, value] : c.assignment) {
    const auto it = r.arg_mappings.find(key);
    if (it != r.arg_mappings.end() && !value.is_null())
      args.insert(args.end(), {it->second, value.is_string() ? value.get<std::string>() : value.dump()});
  }
  return args;
}

sessions::TuneTrialRecord run_one_trial(sessions::Store& store, const TuneRequest& r, const std::string& run_uid,
                                        RunState& s, std::size_t candidate, std::ostream& log) {
  const TuneCandidate& c = s.candidates[candidate];
  const std::string key = assignment_key(c.assignment);
  const auto old = s.rows.find(key);  // a 'running' row of a killed tuner keeps its number
  auto t = new_row(run_uid, c, old != s.rows.end() ? old->second.trial : s.next_trial_number++);
  t.status = "running";
  t.started_at = now_s();
  sessions::put_tune_trial(store, t);
  TrialLaunch launch;
  launch.shardscope = r.shardscope;
  launch.launch_flags = r.launch_flags;
  launch.train_args = trial_train_args(r, c);
  launch.config_path = write_candidate_file(r, t.trial, c.config);
  launch.session_db = r.db;
  launch.session_name = "tune " + run_uid.substr(0, 8) + " #" + std::to_string(t.trial) + " " + t.name;
  launch.steps = r.end_profile_step;
  launch.log_path = (fs::path(r.exps_dir) / ("trial_" + std::to_string(t.trial) + ".log")).string();
  launch.timeout_s = r.trial_timeout_s;
  log << "shardscope tune: trial " << t.trial << " [" << t.name << "] predicted " << gib_text(c.predicted_bytes)
      << " per rank ..." << std::flush;
  const TrialProcessResult p = run_trial_process(launch);
  if (p.interrupted) {  // the row stays 'running': --resume runs this trial again
    log << " stopped\n";
    t.status = "running";
    return t;
  }
  if (const auto id = trial_session(store, launch.session_name, *t.started_at)) measure_session(store, *id, r, t);
  classify(p, t);
  t.ended_at = now_s();
  sessions::put_tune_trial(store, t);
  log << " " << t.status;
  if (t.metric_value && t.status == "ok") log << ", " << tune_metric_name(r.metric) << " " << *t.metric_value;
  if (!t.message.empty()) log << " (" << t.message << ")";
  log << "\n";
  return t;
}

const sessions::TuneTrialRecord* row_of(const RunState& s, std::size_t k) {
  const auto it = s.rows.find(assignment_key(s.candidates[s.runnable[k]].assignment));
  return it == s.rows.end() ? nullptr : &it->second;
}

// Runnable candidates whose trial went out of memory or failed: they no longer block a sibling.
std::vector<bool> failed_runnable(const RunState& s) {
  std::vector<bool> failed(s.runnable.size(), false);
  for (std::size_t k = 0; k < s.runnable.size(); ++k)
    if (const auto* t = row_of(s, k)) failed[k] = t->status == "oom" || t->status == "failed";
  return failed;
}

// What the tuner may pick: untried and not slower by construction than a sibling that still fits.
std::vector<bool> unavailable(const RunState& s, const std::vector<bool>& tried) {
  std::vector<bool> out = tried;
  if (s.dominating.empty()) return out;
  const auto failed = failed_runnable(s);
  for (std::size_t k = 0; k < out.size(); ++k)
    if (!out[k] && blocking_sibling(s.dominating[k], failed)) out[k] = true;
  return out;
}

bool ran_ok(const RunState& s, std::size_t k) {
  const auto* t = row_of(s, k);
  return t && t->status == "ok";
}

// The untried candidates left out because a sibling that fits ran, or was itself left out so; a
// candidate whose siblings the search never reached has no row, like any other it did not reach.
std::vector<bool> skipped_candidates(const RunState& s, const std::vector<bool>& tried, const std::vector<bool>& failed) {
  std::vector<bool> skipped(s.runnable.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < s.runnable.size(); ++k) {
      if (tried[k] || skipped[k]) continue;
      for (const std::size_t sibling : s.dominating[k])
        if (!failed[sibling] && (ran_ok(s, sibling) || skipped[sibling])) {
          skipped[k] = changed = true;
          break;
        }
    }
  }
  return skipped;
}

// "slower by construction than trial 4 [z2 mb16], the same config without activation checkpointing, ..."
std::string skip_reason(const RunState& s, std::size_t k, const std::vector<bool>& skipped) {
  std::size_t by = s.dominating[k].front();
  for (const std::size_t sibling : s.dominating[k])  // name one that ran, where one did
    if (ran_ok(s, sibling) || (skipped[sibling] && !ran_ok(s, by))) by = sibling;
  const Assignment& candidate = s.candidates[s.runnable[k]].assignment;
  const Assignment& sibling = s.candidates[s.runnable[by]].assignment;
  const bool sibling_ran = ran_ok(s, by);
  return "slower by construction than " + (sibling_ran ? "trial " + std::to_string(row_of(s, by)->trial) + " " : std::string()) +
         "[" + assignment_name(sibling) + "], the same config without " + relaxed_feature(candidate, sibling) +
         ", which the estimator lets fit" + (sibling_ran ? " and which ran" : ", itself skipped") +
         "; --try-dominated runs it";
}

// Candidates left out as slower by construction get a row saying which sibling made them so.
void record_skipped(sessions::Store& store, const std::string& run_uid, RunState& s, const std::vector<bool>& tried) {
  if (s.dominating.empty()) return;
  const auto skipped = skipped_candidates(s, tried, failed_runnable(s));
  for (std::size_t k = 0; k < s.runnable.size(); ++k) {
    if (!skipped[k]) continue;
    const auto* old = row_of(s, k);
    auto t = new_row(run_uid, s.candidates[s.runnable[k]], old ? old->trial : s.next_trial_number++);
    t.status = "skipped";
    t.message = skip_reason(s, k, skipped);
    t.started_at = t.ended_at = now_s();
    sessions::put_tune_trial(store, t);
    s.rows[t.candidate_key] = t;
  }
}

}  // namespace

TuneOutcome run_tune(const TuneRequest& r, std::ostream& log) {
  TuneOutcome outcome;
  RunState s;
  s.candidates = plan_candidates(r, outcome.left_out, outcome.grid_points);
  fs::create_directories(r.out_dir);
  sessions::Store store = sessions::Store::open_or_create(r.db);
  const auto run = find_or_start_run(store, r, log);
  outcome.run_uid = run.uid;
  for (const auto& t : sessions::load_tune_trials(store, run.uid)) {
    s.rows[t.candidate_key] = t;
    s.next_trial_number = std::max(s.next_trial_number, t.trial + 1);
  }
  record_pruned(store, run.uid, s, log);
  // The tuner sees the runnable candidates only; finished rows are what it has observed.
  std::vector<Assignment> runnable_assignments;
  for (const std::size_t i : s.runnable) runnable_assignments.push_back(s.candidates[i].assignment);
  const auto tuner = make_tuner(r.tuner, runnable_assignments, r.seed);
  if (r.skip_dominated) s.dominating = dominating_siblings(runnable_assignments);
  std::vector<bool> tried(s.runnable.size(), false);
  std::vector<std::pair<std::int64_t, Observation>> history;  // by trial number
  double spent_s = 0;
  for (std::size_t k = 0; k < s.runnable.size(); ++k) {
    const auto* t = row_of(s, k);
    // A skipped row is not a trial: its sibling may have failed since, making it worth one.
    if (!t || !t->finished() || t->status == "skipped") continue;
    tried[k] = true;
    history.push_back({t->trial, {k, score_of(*t, r.metric)}});
    if (t->started_at && t->ended_at) spent_s += *t->ended_at - *t->started_at;
  }
  std::sort(history.begin(), history.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (r.resume) log << "shardscope tune: " << history.size() << " finished trial(s) kept, none repeated\n";
  std::vector<Observation> observed;
  std::optional<double> best_score;
  std::optional<std::size_t> best_position;
  auto observe = [&](const Observation& o) {
    if (o.score && improves(*o.score, best_score, r.min_improvement)) best_score = o.score, best_position = observed.size();
    observed.push_back(o);
  };
  for (const auto& h : history) observe(h.second);
  outcome.stop_reason = "every candidate was tried";
  bool interrupted = false;
  for (;;) {
    if (stop_requested()) {
      outcome.stop_reason = "stopped by a signal; --resume continues";
      interrupted = true;
      break;
    }
    if (static_cast<std::int64_t>(observed.size()) >= r.max_trials) {
      outcome.stop_reason = "the trial limit (" + std::to_string(r.max_trials) + ") was reached";
      break;
    }
    if (r.budget_s && spent_s >= *r.budget_s) {
      outcome.stop_reason = "the time budget (" + std::to_string(static_cast<long long>(*r.budget_s)) + " s) was spent";
      break;
    }
    if (should_stop_early(observed.size(), best_position, r.early_stopping)) {
      outcome.stop_reason = "early stopping: " + std::to_string(r.early_stopping) +
                            " trial(s) in a row did not beat the best (tuner_early_stopping)";
      break;
    }
    const auto available = unavailable(s, tried);
    const auto pick = tuner->next(observed, available);
    if (!pick) {
      if (available != tried) outcome.stop_reason = "every candidate not slower by construction was tried";
      break;
    }
    tried[*pick] = true;
    const auto t = run_one_trial(store, r, run.uid, s, s.runnable[*pick], log);
    s.rows[t.candidate_key] = t;
    if (!t.finished()) continue;  // interrupted: the loop's first check ends the run
    spent_s += *t.ended_at - *t.started_at;
    observe({*pick, score_of(t, r.metric)});
    // launch exits 2 when nothing could start (bad train arguments, a busy port it names): every
    // other trial would meet the same refusal, so the search ends here with its words.
    if (t.exit_code == 2 && t.status == "failed") {
      outcome.stop_reason = "the launch of trial " + std::to_string(t.trial) + " refused to start (" + t.message +
                            "); every trial would: fix the arguments and start again";
      break;
    }
  }
  if (!interrupted) record_skipped(store, run.uid, s, tried);
  sessions::finish_tune_run(store, run.uid, interrupted ? "stopped" : "completed", now_s());
  outcome.interrupted = interrupted;
  outcome.trials = sessions::load_tune_trials(store, run.uid);
  write_tune_outputs(r, outcome);
  return outcome;
}

}  // namespace shardscope::tune
