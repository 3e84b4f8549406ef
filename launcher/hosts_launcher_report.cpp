// HostsLauncher's account of a run: the session's RunStart (every host's ranks with their pids and
// devices) and HostReports (clock offsets, builds, exit codes), the outcome with its exit code,
// and the closing lines naming the first failure as host:rank.
#include <ostream>

#include "launcher/hosts_launcher.hpp"
#include "launcher/launch_session.hpp"
#include "estimator/peak_flops.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

using sessions::unix_now;

}  // namespace

void HostsLauncher::send_run_start() {
  if (!session_ || run_start_sent_) return;
  for (const auto& n : nodes_)
    if (!n.has_started) return;
  run_start_sent_ = true;
  sessions::RunStart start;
  start.name = launch_session_name(request_.launch, plan_.train);
  start.started_at = started_at_;
  start.command_line = request_.launch.command_line;
  start.config_json = config_json_;
  if (!config_json_.empty()) start.config_hash = sessions::compute_config_hash(config_json_);
  start.environment = environment_;
  start.world_size = plan_.world_size;
  for (const auto& n : nodes_)
    for (const auto& r : n.started) start.ranks.push_back({r.rank, r.local_rank, n.plan.host, r.pid, r.device});
  std::sort(start.ranks.begin(), start.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  start.environment_variables = plan_.exports.variables;  // the store keeps credential names only
  if (!plan_.cpu)
    if (const auto peak = estimator::datasheet_peak(sessions::first_gpu_name(environment_), config_json_)) {
      start.peak_tflops_per_gpu = peak->tflops;
      start.tags.push_back("mfu peak " + peak->source);
    }
  session_->send(start);
  send_host_reports(false);
}

void HostsLauncher::send_host_reports(bool with_exit_codes) {
  for (const auto& n : nodes_) {
    sessions::HostReport report;
    report.host = n.plan.host;
    report.node_rank = n.plan.node_rank;
    report.clock_offset_s = n.link.clock().offset_s;
    if (report.clock_offset_s) report.clock_uncertainty_s = n.link.clock().round_trip_s / 2;
    report.shardscope_version = n.hello.value("shardscope_version", "");
    report.git_hash = n.hello.value("git_hash", "");
    if (with_exit_codes && n.done)
      for (const auto& r : n.done->value("ranks", json::array()))
        report.exit_codes.push_back({r.value("rank", 0), r.value("exit_code", 0)});
    session_->send(report);
  }
}

LaunchOutcome HostsLauncher::outcome() {
  LaunchOutcome o;
  SupervisorResult& r = o.result;
  for (const auto& n : nodes_)
    if (n.done)
      for (const auto& x : n.done->value("ranks", json::array()))
        r.ranks.push_back({x.value("rank", 0), static_cast<pid_t>(x.value("pid", 0)), x.value("wait_status", 0),
                           x.value("exit_code", 0), x.value("stopped_by_launcher", false)});
  std::sort(r.ranks.begin(), r.ranks.end(), [](const RankResult& a, const RankResult& b) { return a.rank < b.rank; });
  r.wall_seconds = unix_now() - started_at_;
  r.interrupt_signal = interrupt_signal_;
  r.killed_after_grace = killed_;
  if (failure_) {
    r.status = "failed";
    r.exit_code = failure_->before_start ? 2 : failure_->exit_code;
    r.first_failure = failure_->who + " " + failure_->description;
    if (failure_->node && nodes_[*failure_->node].done) {
      const json& done = *nodes_[*failure_->node].done;
      if (done.contains("first_failed_rank") && done.at("first_failed_rank").is_number()) {
        r.first_failed_rank = done.at("first_failed_rank").get<int>();
        r.first_failure_stderr = done.value("stderr_tail", std::vector<std::string>{});
      }
    }
  } else if (!stopped_hung_.empty()) {
    r.status = "hung";
    r.exit_code = kHungRunExitCode;
    r.stopped_hung = stopped_hung_;
  } else if (interrupt_signal_) {
    r.status = "interrupted";
    r.exit_code = 128 + interrupt_signal_;
  } else {
    r.status = "completed";
  }
  o.exit_code = r.exit_code;
  return o;
}

void HostsLauncher::report_end(const LaunchOutcome& o) {
  const SupervisorResult& r = o.result;
  std::vector<std::string> lines;
  if (failure_) {
    std::string stopped;
    for (const auto& n : nodes_)
      if (n.done)
        for (const auto& x : n.done->value("ranks", json::array()))
          if (x.value("stopped_by_launcher", false) || (failure_->node && &n != &nodes_[*failure_->node]))
            stopped += (stopped.empty() ? "" : ",") + host_rank(n.plan.host, x.value("rank", 0));
    lines.push_back(r.first_failure + " (the first failure)" +
                    (stopped.empty() ? "" : "; the launcher stopped " + stopped) + ". Exit code " +
                    std::to_string(r.exit_code) + ".");
    for (const auto& n : nodes_)
      if (n.phase == Phase::kLost && (!failure_->node || &n != &nodes_[*failure_->node]))
        lines.push_back("host " + n.plan.host + " did not report how its ranks ended: " + n.lost_reason);
    if (!r.first_failure_stderr.empty()) {
      lines.push_back("last lines of " + failure_->who + "'s stderr:");
      for (const auto& l : r.first_failure_stderr) lines.push_back("  " + l);
    }
  } else if (!r.stopped_hung.empty()) {
    lines.push_back("the run hung and every rank on every host was stopped (--on-hang stop); the doctor's finding "
                    "is above and in the session. Exit code " + std::to_string(r.exit_code) + ".");
  } else if (r.interrupt_signal) {
    lines.push_back(std::string("interrupted by ") + (r.interrupt_signal == 2 ? "SIGINT" : "SIGTERM") +
                    "; every rank on every host was stopped. Exit code " + std::to_string(r.exit_code) + ".");
  } else {
    lines.push_back("all " + std::to_string(plan_.world_size) + " rank(s) on " + std::to_string(nodes_.size()) +
                    " host(s) completed in " + std::to_string(static_cast<long long>(r.wall_seconds + 0.5)) + " s");
  }
  for (const auto& line : lines) message(line, r.status == "completed" ? sessions::LogLevel::kInfo : sessions::LogLevel::kError);
}

LaunchOutcome launch_on_hosts(const HostsRequest& request, std::ostream& out, std::ostream& err) {
  HostsLauncher launcher(request, out, err);
  return launcher.run();
}

}  // namespace shardscope::launcher
