// shardscope watch --db FILE -- <your DeepSpeed command>: runs a user's own `deepspeed ...` or
// `torchrun ...` command with a copy of its config that turns csv_monitor on into a folder of
// ShardScope's own, follows that folder and the command's output live into a session, and on
// Ctrl-C/SIGTERM ends the whole process tree. The pieces are sessions::plan_watch,
// sessions::DeepSpeedRunFollower and the launcher's RankSupervisor; this file wires them.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "app/cli/commands.hpp"
#include "configs/deepspeed_version.hpp"
#include "configs/display_text.hpp"
#include "diagnosis/failed_start.hpp"
#include "diagnosis/numerics_watch.hpp"
#include "diagnosis/output_doctor.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process_tree.hpp"
#include "launcher/rank_supervisor.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/import/deepspeed_run_facts.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/run_follower.hpp"
#include "sessions/import/trainer_log.hpp"
#include "sessions/import/watch_plan.hpp"
#include "sessions/wall_clock.hpp"

extern char** environ;

namespace shardscope::app {
namespace {

namespace fs = std::filesystem;
using namespace sessions;

ArgParser watch_parser() {
  ArgParser parser("watch",
                   "Runs your own DeepSpeed command and follows it live into a session: a copy of its config\n"
                   "(--deepspeed FILE, --deepspeed_config FILE or a .json argument) with csv_monitor turned on\n"
                   "into --out DIR, the command pointed at the copy (your file is never changed), its output and\n"
                   "series recorded as they come. Ctrl-C or SIGTERM ends the whole process tree. Exit code: the\n"
                   "command's (128+signal when it was killed). See docs/sessions.md, \"Watching a DeepSpeed run\".");
  parser.option("db", "FILE", "the session store (created if missing)")
      .option("out", "DIR", "where the config copy, the csv_monitor folder and output.log go (default: "
                            "shardscope-watch-<time> beside the store)")
      .option("name", "TEXT", "session name (default: the config file's name)")
      .option("tag", "TEXT", "a tag (repeatable)", true)
      .option("poll-ms", "N", "how often the csv_monitor folder is read (default 500)")
      .option("grace", "SECONDS", "SIGTERM to SIGKILL when stopping the command (default 10)")
      .option("hang-after", "SECONDS", "no output line and no new step for this long while the command runs is a "
                                       "stall finding (default: 300 before the first step, then max(60, 20 x the "
                                       "median step time))")
      .allow_passthrough("the command to run, e.g. deepspeed train.py --deepspeed ds.json");
  add_deepspeed_version_option(parser);
  return parser;
}

constexpr std::size_t kOutputTailLines = 200;

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  throw UsageError("watch: '" + name + "' is not an executable on PATH; give its full path or activate its venv");
}

std::string default_out_dir(const std::string& db) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return (fs::absolute(db).parent_path() / ("shardscope-watch-" + std::string(stamp))).string();
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

using sessions::host_name;

struct WatchContext {
  ParsedArgs parsed;
  WatchPlan plan;
  std::string db, uid, name, config_json;
  configs::DeepSpeedRules rules;  ///< whose rules resolve the recorded config (--deepspeed-version)
  std::optional<std::int64_t> train_batch_size;
  double started_at = 0;
  std::string program;   ///< the command's executable, found on PATH
  double grace_seconds = 10;
  int poll_ms = 500;
  double hang_after_s = 0;  ///< --hang-after; 0: the doctor derives it
};

// Everything that can be wrong with the flags is found before the session is opened.
void read_flags(WatchContext& w) {
  w.program = find_program(w.plan.command[0]);
  if (auto grace = w.parsed.value("grace")) {
    char* end = nullptr;
    w.grace_seconds = std::strtod(grace->c_str(), &end);
    if (grace->empty() || *end || !(w.grace_seconds >= 0 && w.grace_seconds <= 3600))
      throw UsageError("--grace expects seconds between 0 and 3600, got '" + *grace + "'");
  }
  if (auto hang = w.parsed.value("hang-after")) {
    char* end = nullptr;
    w.hang_after_s = std::strtod(hang->c_str(), &end);
    if (hang->empty() || *end || !(w.hang_after_s > 0 && w.hang_after_s <= 1e7))
      throw UsageError("--hang-after must be a number of seconds above 0, got '" + *hang + "'");
  }
  w.poll_ms = static_cast<int>(w.parsed.integer("poll-ms").value_or(500));
  if (w.poll_ms < 10 || w.poll_ms > 60000) throw UsageError("--poll-ms must be between 10 and 60000");
}

RunStartInputs start_inputs(const WatchContext& w) {
  RunStartInputs inputs;
  inputs.name = w.name;
  inputs.tags = w.parsed.values("tag");
  inputs.command_line = w.parsed.passthrough;
  inputs.config_json = w.config_json;
  inputs.started_at = w.started_at;
  inputs.hosts = {host_name()};
  inputs.local_host = host_name();  // a watched run runs here: DeepSpeed's "localhost" is this machine
  return inputs;
}

nlohmann::json origin_details(const WatchContext& w, const std::string& out_dir) {
  return {{"command", w.parsed.passthrough}, {"run_command", w.plan.command}, {"config", fs::absolute(w.plan.config_path).string()},
          {"config_copy", w.plan.config_copy}, {"csv_monitor", w.plan.csv_dir},
          {"output_log", (fs::path(out_dir) / "output.log").string()},
          {"deepspeed_version", configs::to_string(w.rules.version)}, {"deepspeed_rules", w.rules.describe()}};
}

// Runs `tick` every poll-ms until stopped, under the follower's mutex; a tick that throws (the
// session file failed) stops the ticks, not the run.
class Poller {
 public:
  Poller(std::mutex& mutex, int every_ms, std::function<void()> tick)
      : thread_([this, &mutex, every_ms, tick = std::move(tick)] {
          std::unique_lock<std::mutex> wait_lock(wait_mutex_);
          while (!stop_) {
            wake_.wait_for(wait_lock, std::chrono::milliseconds(every_ms));
            std::lock_guard<std::mutex> lock(mutex);
            try {
              tick();
            } catch (const std::exception& error) {
              std::cerr << "shardscope watch: stopped recording the series: " << configs::shown_text(error.what()) << "\n";
              return;
            }
          }
        }) {}
  ~Poller() {
    {
      std::lock_guard<std::mutex> lock(wait_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  std::mutex wait_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// The run doctor of a watched command: its output read line by line, and its steps' losses and
// loss scales (NaN/Inf, an overflow streak, a spike) as the follower records them.
struct WatchDoctor {
  diagnosis::OutputDoctor output;
  diagnosis::NumericsWatch numerics;
};

// Shows every event to the numerics watch before passing it on: the follower's steps, and the
// run's start with its config (fp16.min_loss_scale).
class ObservedSink final : public EventSink {
 public:
  ObservedSink(EventSink& inner, diagnosis::NumericsWatch& numerics) : inner_(inner), numerics_(numerics) {}
  void send(const Event& event) override {
    numerics_.observe(event);
    inner_.send(event);
  }
  void flush() override { inner_.flush(); }
  void close() override { inner_.close(); }

 private:
  EventSink& inner_;
  diagnosis::NumericsWatch& numerics_;
};

using sessions::unix_now;

// The doctor's findings, as they come: on the terminal beside the command's output, and stored.
void report_finding(const Finding& f, EventSink& sink) {
  std::cerr << "shardscope watch: doctor: " << configs::shown_text(f.summary) << "\n  fix: "
            << configs::shown_text(f.suggested_fix) << "\n";
  sink.send(f);
}

launcher::SupervisorResult run_followed(const WatchContext& w, DeepSpeedRunFollower& follower, EventSink& sink,
                                        std::mutex& mutex, std::ofstream& log, std::deque<std::string>& tail,
                                        WatchDoctor& doctor) {
  launcher::SupervisorOptions options;
  launcher::RankSpec spec;
  spec.command.program = w.program;
  spec.command.argv = w.plan.command;
  spec.command.env = current_environment();
  options.ranks = {spec};
  options.out = &std::cout;
  options.err = &std::cerr;
  options.grace_seconds = w.grace_seconds;
  options.voice = {"shardscope watch", "the command"};  // the user's command, no rank of ShardScope's
  options.on_line = [&](const LogLine& line) {
    std::lock_guard<std::mutex> lock(mutex);
    if (line.rank < 0) return sink.send(line);  // the supervisor's own messages, not the command's output
    log << line.text << "\n";
    tail.push_back(line.text);
    if (tail.size() > kOutputTailLines) tail.pop_front();
    follower.on_output_line(line.text);
    if (const auto finding = doctor.output.on_line(line.text, unix_now())) report_finding(*finding, sink);
  };
  Poller poller(mutex, w.poll_ms, [&] {
    follower.poll();
    const double now = unix_now();
    doctor.output.on_steps(follower.last_step(), now);
    if (const auto finding = doctor.output.check(now)) report_finding(*finding, sink);
    for (const auto& finding : doctor.numerics.check(now)) report_finding(finding, sink);
  });
  launcher::RankSupervisor supervisor(std::move(options));
  return supervisor.run();
}

// The config the run used: what DeepSpeed printed it ran with (after a Trainer filled its "auto"
// values), with the keys the watch copy changed put back, else the file as written; resolved for
// the world size the launcher named.
std::string effective_config(const WatchContext& w, const DeepSpeedRunFollower& follower, nlohmann::json& details) {
  const auto& printed = follower.facts().user_config_json;
  details["config_as_written"] = nlohmann::json::parse(w.plan.user_config_json, nullptr, false);
  details["effective_config"] = printed.empty() ? "as written (DeepSpeed printed no config)"
                                                : "as DeepSpeed printed it at engine start";
  if (printed.empty() && !follower.facts().world_size) return w.config_json;
  std::vector<std::string> notes;
  const std::string text = effective_user_config(printed.empty() ? w.plan.config_json : printed, w.plan);
  return record_deepspeed_config(text, w.plan.config_copy, follower.facts().world_size, notes, w.rules.version).json;
}

// The Trainer's trainer_state.json written during the run (under the working folder or the
// command's --output_dir): exact values for what its printed dicts rounded.
void read_trainer_state(const WatchContext& w, DeepSpeedRunFollower& follower, nlohmann::json& details) {
  std::vector<std::string> folders{"."};
  const auto& command = w.plan.command;
  for (std::size_t i = 0; i < command.size(); ++i)
    for (const std::string flag : {"--output_dir", "--output-dir"}) {
      if (command[i] == flag && i + 1 < command.size()) folders.insert(folders.begin(), command[i + 1]);
      if (command[i].rfind(flag + "=", 0) == 0) folders.insert(folders.begin(), command[i].substr(flag.size() + 1));
    }
  for (const auto& folder : folders) {
    const auto path = find_trainer_state(folder, w.started_at);
    if (!path) continue;
    try {
      details["trainer_state"] = fs::absolute(*path).lexically_normal().string();
      details["trainer_state_records"] = follower.read_trainer_state_file(*path);
    } catch (const ImportError& error) {
      std::cerr << "shardscope watch: " << configs::shown_text(error.what()) << "\n";
    }
    return;
  }
}

// DeepSpeed's, transformers' and Accelerate's versions in the Python that ran the command.
void record_versions(const WatchContext& w, RunStart& start) {
  const std::string python = configs::python_of_program(w.program);
  if (python.empty()) return;
  auto versions = configs::installed_package_versions(python, {"deepspeed", "transformers", "accelerate"});
  auto& v = start.environment.versions;
  if (v.deepspeed.empty()) v.deepspeed = versions["deepspeed"];  // the log's own line wins
  v.transformers = versions["transformers"];
  v.accelerate = versions["accelerate"];
}

// A command that failed before its first step gets a finding saying why and how to launch it.
void report_failed_start(const DeepSpeedRunFollower& follower, const std::deque<std::string>& tail,
                         const launcher::SupervisorResult& result, EventSink& sink) {
  if (follower.steps_sent() > 0) return;
  const auto finding = diagnosis::diagnose_failed_start({tail.begin(), tail.end()}, result.exit_code);
  if (!finding) return;
  std::cerr << "shardscope watch: " << finding->summary << "\n  fix: " << finding->suggested_fix << "\n";
  sink.send(*finding);
}

void record_end(const WatchContext& w, const std::string& out_dir, EventSink& sink,
                DeepSpeedRunFollower& follower, const launcher::SupervisorResult& result) {
  RunStartInputs inputs = start_inputs(w);
  nlohmann::json details = origin_details(w, out_dir);
  inputs.config_json = effective_config(w, follower, details);
  read_trainer_state(w, follower, details);
  RunStart start = deepspeed_run_start(follower.facts(), inputs);
  start.started_at = w.started_at;  // the watcher saw the real start
  record_versions(w, start);
  sink.send(start);
  details["exit_code"] = result.exit_code;  // the command's own, as a shell reports it
  sink.send(SessionOrigin{"deepspeed-watch", details.dump()});
  RunEnd end = deepspeed_run_end(follower.facts(), result.status);
  end.status = result.status;
  end.ended_at = static_cast<double>(std::time(nullptr));
  end.wall_time_s = result.wall_seconds;
  sink.send(end);
  sink.close();
}

}  // namespace

int run_watch_command(const CommandArgs& args) {
  const ArgParser parser = watch_parser();
  WatchContext w;
  w.parsed = parser.parse(args);
  if (w.parsed.help) return std::cout << parser.help_text(), kExitOk;
  const auto db = w.parsed.value("db");
  if (!db) throw UsageError("watch needs --db FILE (the session store to record the run in)");
  w.db = *db;
  const std::string out_dir = w.parsed.value("out").value_or(default_out_dir(w.db));
  w.rules = deepspeed_rules_from(w.parsed);
  if (const auto removed = removed_launcher_flags(w.parsed.passthrough, w.rules.version); !removed.empty())
    throw UsageError("watch: DeepSpeed " + std::string(configs::to_string(w.rules.version)) + "'s launcher has no " +
                     removed.front() + " (elastic training was removed in 0.19.8): it would exit with \"deepspeed: "
                     "error: unrecognized arguments: " + removed.front() + "\"; drop the flag, or run DeepSpeed "
                     "0.19.7 (--deepspeed-version says which rules apply: " + w.rules.describe() + ")");
  try {
    w.plan = plan_watch(w.parsed.passthrough, out_dir);
    std::vector<std::string> notes;
    const RecordedConfig config =
        record_deepspeed_config(effective_user_config(w.plan.config_json, w.plan), w.plan.config_copy, std::nullopt,
                                notes, w.rules.version);
    w.config_json = config.json;
    // Only a written train_batch_size: solved from the micro batch it needs the world size, which
    // the log's config dump gives the follower once the engine starts.
    w.train_batch_size = w.plan.train_batch_size;
  } catch (const ImportError& error) {
    throw UsageError(std::string("watch: ") + error.what());
  }
  read_flags(w);
  w.name = w.parsed.value("name").value_or(fs::path(w.plan.config_path).stem().string());
  w.uid = new_session_uid();
  w.started_at = static_cast<double>(std::time(nullptr));
  launcher::become_child_subreaper();
  FileEventSink file_sink({w.db, w.uid});
  diagnosis::OutputDoctorOptions doctor_options;
  doctor_options.hang_after_s = w.hang_after_s;
  doctor_options.config_path = w.plan.config_path;
  WatchDoctor doctor{diagnosis::OutputDoctor(doctor_options), diagnosis::NumericsWatch()};
  ObservedSink sink(file_sink, doctor.numerics);
  sink.send(deepspeed_run_start({}, start_inputs(w)));
  sink.send(SessionOrigin{"deepspeed-watch", origin_details(w, out_dir).dump()});
  std::cerr << "shardscope watch: session " << w.uid << " in " << w.db << "; config copy " << w.plan.config_copy
            << "\n";
  std::cerr << "shardscope watch: rules: " << w.rules.describe() << "\n";
  std::ofstream log(fs::path(out_dir) / "output.log", std::ios::trunc);
  std::mutex mutex;
  DeepSpeedRunFollower follower(sink, {w.plan.csv_dir, w.train_batch_size});
  std::deque<std::string> tail;  // the output's last lines, for a run that fails before its first step
  launcher::SupervisorResult result;
  try {
    result = run_followed(w, follower, sink, mutex, log, tail, doctor);
  } catch (const launcher::LaunchError& error) {
    std::cerr << "shardscope watch: error: " << configs::shown_text(error.what()) << "\n";
    result.status = "failed";
    result.exit_code = kExitUsage;
  }
  // Whatever the command's launcher orphaned (torchrun's workers run in sessions of their own).
  if (const auto ended = launcher::end_descendants(5.0))
    std::cerr << "shardscope watch: ended " << ended << " process(es) the command left behind\n";
  follower.finish();
  for (const auto& finding : doctor.numerics.check(unix_now())) report_finding(finding, sink);  // the last polls' steps
  if (const auto finding = doctor.output.finish()) report_finding(*finding, sink);
  if (!doctor.output.reported_error()) report_failed_start(follower, tail, result, sink);
  record_end(w, out_dir, sink, follower, result);
  print_closing_summary("shardscope watch", "the command", result.exit_code, w.uid, w.db);
  return result.exit_code;
}

}  // namespace shardscope::app
