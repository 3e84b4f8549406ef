#include "launcher/local_launcher.hpp"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <ostream>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "estimator/peak_flops.hpp"
#include "configs/diagnostic.hpp"
#include "configs/resolved_json.hpp"
#include "profiler/environment_probe.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_session.hpp"
#include "launcher/port_check.hpp"
#include "sessions/build_info.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using sessions::unix_now;

std::string file_stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = name.find_last_of('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

using sessions::host_name;

sessions::RunStart make_run_start(const LaunchRequest& request, const LaunchPlan& plan, const std::string& config_json,
                                  const sessions::EnvironmentReport& environment,
                                  const std::vector<StartedRank>& started, double started_at) {
  sessions::RunStart start;
  start.name = launch_session_name(request, plan.train);
  start.started_at = started_at;
  start.command_line = request.command_line;
  if (start.command_line.empty()) start.command_line = plan.ranks.front().command.argv;
  start.config_json = config_json;
  if (!config_json.empty()) start.config_hash = sessions::compute_config_hash(config_json);
  start.environment = environment;
  start.world_size = request.placement ? request.placement->world_size : static_cast<int>(plan.ranks.size());
  const std::string host = request.placement ? request.placement->name : host_name();
  for (const auto& r : started) start.ranks.push_back({r.rank, r.local_rank, host, r.pid, r.device});
  if (!plan.cpu) {
    if (const auto peak = estimator::datasheet_peak(sessions::first_gpu_name(environment), config_json)) {
      start.peak_tflops_per_gpu = peak->tflops;
      start.tags.push_back("mfu peak " + peak->source);
    }
  }
  return start;
}

std::string describe_plan(const LaunchRequest& request, const LaunchPlan& plan) {
  std::string where = plan.cpu ? "CPU" : "GPU";
  if (!plan.cpu) {
    where += plan.device_ids.size() > 1 ? "s " : " ";
    for (std::size_t i = 0; i < plan.device_ids.size(); ++i) where += (i ? "," : "") + std::to_string(plan.device_ids[i]);
  }
  std::string host = "localhost";
  if (const auto& node = request.placement)
    host = node->name + " (node " + std::to_string(node->node_rank) + " of " + std::to_string(node->node_count) +
           ", ranks " + std::to_string(plan.ranks.front().rank) + "-" + std::to_string(plan.ranks.back().rank) + " of " +
           std::to_string(node->world_size) + ")";
  return "starting " + std::to_string(plan.ranks.size()) + " rank(s) on " + host + " (" + where + "), MASTER_ADDR=" +
         plan.master_addr + " MASTER_PORT=" + std::to_string(plan.master_port);
}

SupervisorOptions supervisor_options(const LaunchRequest& request, const LaunchPlan& plan, std::ostream& out,
                                     std::ostream& err) {
  SupervisorOptions options;
  options.ranks = plan.ranks;
  options.grace_seconds = request.grace_seconds;
  options.handle_signals = request.handle_signals;
  options.out = &out;
  options.err = &err;
  options.each_rank_log_dir = request.each_rank_log_dir;
  return options;
}

// "rank 0 pid 1234 (cuda:0), rank 1 pid 1235 (cuda:1)": how a user (or a test) finds a rank.
std::string describe_started(const std::vector<StartedRank>& started) {
  std::string text;
  for (const auto& r : started)
    text += (text.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r.rank) + " pid " +
            std::to_string(r.pid) + " (" + r.device + ")";
  return text;
}

void report_end(const SupervisorResult& r, std::ostream& err, LaunchSession* session) {
  std::vector<std::string> lines;
  if (r.first_failed_rank) {
    std::string stopped;
    for (const auto& rank : r.ranks)
      if (rank.stopped_by_launcher) stopped += (stopped.empty() ? "" : ",") + std::to_string(rank.rank);
    lines.push_back(r.first_failure + " (the first rank to fail)" +
                    (stopped.empty() ? "" : "; the launcher stopped rank(s) " + stopped) + ". Exit code " +
                    std::to_string(r.exit_code) + ".");
    if (r.first_failure_stderr.empty()) {
      lines.push_back("rank " + std::to_string(*r.first_failed_rank) + " wrote nothing to stderr");
    } else {
      lines.push_back("last lines of rank " + std::to_string(*r.first_failed_rank) + "'s stderr:");
      for (const auto& l : r.first_failure_stderr) lines.push_back("  " + l);
    }
  } else if (!r.stopped_hung.empty()) {
    lines.push_back("the run hung and every rank was stopped (--on-hang stop); the doctor's finding is above and in "
                    "the session. Exit code " + std::to_string(r.exit_code) + ".");
  } else if (r.interrupt_signal) {
    lines.push_back(std::string("interrupted by ") + (r.interrupt_signal == 2 ? "SIGINT" : "SIGTERM") +
                    "; every rank was stopped. Exit code " + std::to_string(r.exit_code) + ".");
  } else {
    lines.push_back("all " + std::to_string(r.ranks.size()) + " rank(s) completed in " +
                    std::to_string(static_cast<long long>(r.wall_seconds + 0.5)) + " s");
  }
  const auto level = r.status == "completed" ? sessions::LogLevel::kInfo : sessions::LogLevel::kError;
  for (const auto& line : lines) {
    err << "shardscope launch: " << line << "\n";
    if (session) session->send(sessions::LogLine{-1, unix_now(), level, line});
  }
  err.flush();
}

}  // namespace

std::string launch_session_name(const LaunchRequest& request, const TrainArgsView& train) {
  if (!request.name.empty()) return request.name;
  if (train.name && !train.name->empty()) return *train.name;
  if (train.config && !train.config->empty()) return file_stem(*train.config);
  return "launch";
}

std::string resolve_launch_config(const TrainArgsView& train, int world_size) {
  if (!train.config) return "";
  configs::ConfigDocument document;
  try {
    document = configs::parse_config_file(*train.config);
  } catch (const configs::ConfigFileError& e) {
    throw LaunchError(LaunchError::Kind::kUsage, std::string("--config (in the train arguments): ") + e.what());
  }
  configs::ValidateOptions options;
  options.own_optimizer = true;  // ShardScope builds the default optimizer when the config has none
  options.world_size = world_size;
  if (train.deepspeed_version) {  // the ranks validate with the same rules (`launch` passes them on)
    try {
      options.deepspeed_version = configs::deepspeed_version_from_flag(*train.deepspeed_version);
    } catch (const std::invalid_argument& e) {
      throw LaunchError(LaunchError::Kind::kUsage, e.what());
    }
  }
  for (const auto& text : train.overrides) {
    try {
      options.overrides.push_back(configs::parse_override(text));
    } catch (const std::invalid_argument& e) {
      throw LaunchError(LaunchError::Kind::kUsage, std::string("--set (in the train arguments): ") + e.what());
    }
  }
  const auto result = configs::validate(document, options);
  std::string errors;
  for (const auto& d : result.diagnostics)
    if (d.severity == configs::Severity::kError) errors += configs::format_diagnostic_text(*train.config, d);
  if (!errors.empty() || !result.config)
    throw LaunchError(LaunchError::Kind::kConfig, std::string("the config has errors (DeepSpeed ") +
                                                      configs::to_string(options.deepspeed_version) +
                                                      " would refuse it too); no rank was started:\n" + errors);
  return configs::resolved_config_json(result.resolved);
}

namespace {

int world_size_of(const LaunchRequest& r, const LaunchPlan& plan) {
  return r.placement ? r.placement->world_size : static_cast<int>(plan.ranks.size());
}

// The launcher's own session (a local run, --no_ssh node 0), node 0's joined (--no_ssh node R > 0),
// or none.
std::unique_ptr<LaunchSession> open_session(const LaunchRequest& r, int world, RunDoctor* doctor) {
  LaunchSessionOptions o;
  if (doctor) o.observe = [doctor](const sessions::Event& e) { doctor->observe(e); };
  o.world_size = world;
  o.secret = r.secret;
  if (r.session_db) {
    o.db_path = *r.session_db;
    if (!r.collector_bind_host.empty()) o.bind_host = r.collector_bind_host;
    o.port = r.collector_port;
  } else if (r.join_collector && r.secret) {
    o.join = *r.join_collector;
  } else {
    return nullptr;
  }
  return std::make_unique<LaunchSession>(o);
}

// A --no_ssh node: its host, ranks and clock as a HostReport (node 0's RunStart lists only its own).
sessions::HostReport node_report(const LaunchRequest& r, const std::vector<StartedRank>& started,
                                 const LaunchSession& session) {
  sessions::HostReport report;
  report.host = r.placement->name;
  report.node_rank = r.placement->node_rank;
  report.clock_offset_s = session.clock_offset_s();
  report.shardscope_version = sessions::build_info().version;
  report.git_hash = sessions::build_info().git_hash;
  for (const auto& s : started) report.ranks.push_back({s.rank, s.local_rank, r.placement->name, s.pid, s.device});
  return report;
}

}  // namespace

LaunchOutcome launch_local(const LaunchRequest& request, std::ostream& out, std::ostream& err) {
  const double started_at = unix_now();
  LaunchPlan plan = make_launch_plan(request);
  for (const auto& note : plan.notes) err << "shardscope launch: " << note << "\n";
  const int world = world_size_of(request, plan);
  const std::string config_json = resolve_launch_config(plan.train, world);
  // Rank 0's node binds the rendezvous; on another node MASTER_ADDR is not this machine's.
  if (!request.placement || request.placement->node_rank == 0) check_master_port_free(plan.master_addr, plan.master_port);
  // The run doctor watches the runs this launcher records: it sees what the collector receives.
  std::unique_ptr<RunDoctor> doctor =
      request.session_db ? std::make_unique<RunDoctor>(request.doctor, started_at) : nullptr;
  std::unique_ptr<LaunchSession> session = open_session(request, world, doctor.get());
  const bool owns_run = session && request.session_db;
  if (session) attach_session(plan, session->collector_address(), session->secret());
  err << "shardscope launch: " << describe_plan(request, plan)
      << (session ? ", session " + session->uid() + (owns_run ? " in " + *request.session_db : " at " + session->collector_address())
                  : std::string())
      << std::endl;
  // Probe the environment before any rank starts: the loop must not pause while ranks write.
  sessions::EnvironmentReport environment;
  if (owns_run) environment = request.environment_report ? request.environment_report() : profiler::collect_environment_report();

  SupervisorOptions options = supervisor_options(request, plan, out, err);
  std::vector<StartedRank> started_ranks;
  options.on_started = [&](const std::vector<StartedRank>& started) {
    started_ranks = started;
    err << "shardscope launch: " << describe_started(started) << std::endl;
    if (owns_run) session->send(make_run_start(request, plan, config_json, environment, started, started_at));
    if (session && request.placement) session->send(node_report(request, started, *session));
  };
  if (session) options.on_line = [&session](const sessions::LogLine& line) { session->send(line); };
  if (doctor) options.on_tick = [&] { return doctor->tick(err, session.get()); };
  LaunchOutcome outcome;
  RankSupervisor supervisor(std::move(options));
  try {
    outcome.result = supervisor.run();
  } catch (const std::exception& e) {
    // A rank that could not start: the session must not look like a run still going.
    if (session) session->send(sessions::LogLine{-1, unix_now(), sessions::LogLevel::kError, e.what()});
    if (owns_run) session->send(sessions::RunEnd{"failed", unix_now(), unix_now() - started_at, {}});
    throw;
  }
  outcome.exit_code = outcome.result.exit_code;
  report_end(outcome.result, err, session.get());
  if (session) {
    std::vector<sessions::RankExit> exits;
    for (const auto& r : outcome.result.ranks) exits.push_back({r.rank, r.exit_code});
    if (owns_run) {
      session->send(sessions::RunEnd{outcome.result.status, unix_now(), unix_now() - started_at, exits});
    } else {
      sessions::HostReport report = node_report(request, started_ranks, *session);
      report.exit_codes = exits;
      session->send(report);
    }
    session->close();
    outcome.session_uid = session->uid();
  }
  return outcome;
}

}  // namespace shardscope::launcher
