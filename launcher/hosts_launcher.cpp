// HostsLauncher's phases: start the transports, wait for every agent's hello, settle the master
// address, the session and the clocks, send the jobs, watch (hosts_launcher_events.cpp), and end:
// the transports reaped, the outcome judged, the session closed.
#include "launcher/hosts_launcher.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>

#include "profiler/environment_probe.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_session.hpp"
#include "launcher/launch_routing.hpp"
#include "launcher/signal_routing.hpp"
#include "sessions/build_info.hpp"
#include "sessions/wall_clock.hpp"
#include "launcher/environment_exports.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

constexpr int kClockProbes = 5;
constexpr auto kTransportExitWait = std::chrono::seconds(5);

using sessions::unix_now;

std::string current_directory() {
  char path[PATH_MAX] = {};
  return ::getcwd(path, sizeof path) ? path : "";
}

std::string rank_range(const PlannedNode& n) {
  if (n.slots.empty()) return "no ranks";
  const int last = n.first_rank + static_cast<int>(n.slots.size()) - 1;
  return last == n.first_rank ? "rank " + std::to_string(last)
                              : "ranks " + std::to_string(n.first_rank) + "-" + std::to_string(last);
}

// A private temporary hostfile for mpirun: each selected host with one slot (one agent).
std::string write_mpi_hostfile(const std::vector<PlannedNode>& nodes) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardscope-mpi-hosts-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw LaunchError(LaunchError::Kind::kEnvironment, "cannot create a hostfile for mpirun in " + path);
  std::string text;
  for (const auto& n : nodes) text += n.host + " slots=1\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) throw LaunchError(LaunchError::Kind::kEnvironment, "cannot write the hostfile for mpirun " + path);
  return path;
}

}  // namespace

HostsLauncher::HostsLauncher(HostsRequest request, std::ostream& out, std::ostream& err)
    : request_(std::move(request)), out_(out), err_(err), cwd_(current_directory()) {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
    throw LaunchError(LaunchError::Kind::kEnvironment, "cannot create the launcher's wake-up pipe");
  wake_read_ = wake[0];
  wake_write_ = wake[1];
  const char* home = std::getenv("HOME");
  plan_ = plan_hosts(request_, {request_.launch.base_env ? *request_.launch.base_env : process_environment(),
                                home ? home : "", cwd_});
  for (const auto& planned : plan_.nodes) {
    Node node;
    node.plan = planned;
    nodes_.push_back(std::move(node));
  }
}

HostsLauncher::~HostsLauncher() {
  if (!mpi_hostfile_.empty()) ::unlink(mpi_hostfile_.c_str());
  ::close(wake_read_);
  ::close(wake_write_);
}

void HostsLauncher::start_transports() {
  TransportOptions o;
  o.launcher = request_.launcher;
  for (const auto& n : nodes_) o.hosts.push_back(n.plan.host);
  o.agent_program = request_.agent_program;
  o.ssh_port = request_.ssh_port;
  o.launcher_args = request_.launcher_args;
  if (connects_back(request_.launcher)) {
    // The agents reach this machine on the address that faces the first host.
    rendezvous_ = std::make_unique<AgentRendezvous>(address_toward(nodes_.front().plan.host));
    o.connect_address = rendezvous_->address();
  }
  if (request_.launcher == NodeLauncher::kOpenMpi) o.mpi_hostfile = mpi_hostfile_ = write_mpi_hostfile(plan_.nodes);
  for (auto& spec : transport_processes(o, request_.launch.base_env ? *request_.launch.base_env : process_environment())) {
    Transport t;
    t.spec = std::move(spec);
    t.process = RankProcess::spawn(t.spec.command);
    transports_.push_back(std::move(t));
    const std::size_t index = transports_.size() - 1;
    if (transports_[index].spec.node >= 0) {
      Node& node = nodes_[static_cast<std::size_t>(transports_[index].spec.node)];
      node.transport = index;
      // ssh: the agent's channel is ssh's own stdout and stdin.
      node.link.attach(transports_[index].process->stdout_fd(), transports_[index].process->stdin_fd(), false);
    }
  }
}

void HostsLauncher::connect_all() {
  const auto deadline = AgentClock::now() + std::chrono::duration_cast<AgentClock::duration>(
                                                std::chrono::duration<double>(request_.connect_timeout_s));
  while (!all_nodes(Phase::kReady) && !stopping_) {
    if (AgentClock::now() > deadline)
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].phase == Phase::kConnecting)
          mark_lost(i, "its agent did not answer within " +
                              std::to_string(static_cast<int>(request_.connect_timeout_s)) + " s");
    pump(200);
  }
  for (const auto& n : nodes_) {
    if (n.phase != Phase::kReady) continue;
    const std::string version = n.hello.value("shardscope_version", ""), git = n.hello.value("git_hash", "");
    const auto& mine = sessions::build_info();
    if (version != mine.version || git != mine.git_hash)
      message("warning: version skew: " + n.plan.host + " runs shardscope " + version + " (git " + git +
                  "), this launcher is " + mine.version + " (git " + mine.git_hash +
                  "); install the same build on every host", sessions::LogLevel::kWarning);
  }
}

std::string HostsLauncher::master_address() {
  if (!request_.launch.master_addr.empty()) return request_.launch.master_addr;
  const Node& first = nodes_.front();
  // An unreachable first host (the preflight goes on without it) said no hello at all.
  const auto addresses =
      first.hello.is_object() ? first.hello.value("addresses", std::vector<std::string>{}) : std::vector<std::string>{};
  if (addresses.empty())
    throw LaunchError(LaunchError::Kind::kUsage,
                      "Unable to detect suitable master address via `hostname -I`, please manually specify one via "
                      "--master_addr (" + first.plan.host + " reported no address)");
  message("Using IP address of " + addresses.front() + " for node " + first.plan.host, sessions::LogLevel::kInfo);
  return addresses.front();
}

void HostsLauncher::configure_run() {
  master_addr_ = master_address();
  for (int probe = 0; probe < kClockProbes; ++probe) {
    for (auto& n : nodes_) n.link.ping();
    pump(20);
  }
  if (request_.launch.session_db) {
    LaunchSessionOptions o;
    o.db_path = *request_.launch.session_db;
    o.bind_host = request_.collector_addr.empty() ? address_toward(master_addr_) : request_.collector_addr;
    o.port = request_.collector_port;
    o.world_size = plan_.world_size;
    o.secret = request_.secret;
    doctor_ = std::make_unique<RunDoctor>(request_.launch.doctor, started_at_);
    o.observe = [doctor = doctor_.get()](const sessions::Event& e) { doctor->observe(e); };
    session_ = std::make_unique<LaunchSession>(o);
    message("session " + session_->uid() + " in " + o.db_path + ", collector at " + session_->collector_address(),
            sessions::LogLevel::kInfo);
    environment_ =
        request_.launch.environment_report ? request_.launch.environment_report() : profiler::collect_environment_report();
  }
  send_jobs("train");
}

void HostsLauncher::send_jobs(const std::string& kind) {
  const std::optional<std::string> collector =
      session_ ? std::optional<std::string>(session_->collector_address()) : std::nullopt;
  const std::string secret = session_ ? session_->secret() : "";
  for (auto& n : nodes_) {
    if (n.phase != Phase::kReady) continue;
    NodeJob job = job_for(plan_, n.plan, request_, master_addr_, collector, secret, cwd_);
    job.kind = kind;
    n.link.send(job_to_json(job));
    n.phase = Phase::kRunning;
  }
  next_ping_ = AgentClock::now();
}

void HostsLauncher::finish_transports() {
  for (auto& n : nodes_) {
    n.link.close();  // closing ssh's stdin ends the agent's channel: it exits once its ranks are done
    if (n.transport) transports_[*n.transport].process->close_stdin();
  }
  const auto deadline = AgentClock::now() + kTransportExitWait;
  auto running = [&] {
    for (const auto& t : transports_)
      if (!t.wait_status) return true;
    return false;
  };
  while (running() && AgentClock::now() < deadline) pump(100);
  for (auto& t : transports_)
    if (!t.wait_status) t.process->signal_group(SIGTERM);
  const auto kill_deadline = AgentClock::now() + std::chrono::seconds(2);
  while (running() && AgentClock::now() < kill_deadline) pump(100);
  for (auto& t : transports_) t.process.reset();  // SIGKILL and reap whatever is left
}

LaunchOutcome HostsLauncher::run() {
  started_at_ = unix_now();
  for (const auto& note : plan_.exports.notes) message(note, sessions::LogLevel::kInfo);
  config_json_ = resolve_launch_config(plan_.train, plan_.world_size);
  SignalRouting routing(request_.launch.handle_signals ? wake_write_ : -1);
  std::string where;
  for (const auto& n : nodes_) where += (where.empty() ? "" : ", ") + n.plan.host + " " + rank_range(n.plan);
  message("starting " + std::to_string(plan_.world_size) + " rank(s) on " + std::to_string(nodes_.size()) +
              " host(s) through " + node_launcher_name(request_.launcher) + " (" + where + ")" +
              (plan_.cpu ? ", CPU ranks" : "") + ", MASTER_PORT=" + std::to_string(request_.launch.master_port),
          sessions::LogLevel::kInfo);
  start_transports();
  connect_all();
  if (failure_) {
    stop_all(SIGTERM);
    finish_transports();
    throw LaunchError(LaunchError::Kind::kEnvironment, failure_->who + " " + failure_->description);
  }
  configure_run();
  while (!all_nodes(Phase::kDone)) pump(200);
  finish_transports();
  LaunchOutcome result = outcome();
  report_end(result);
  if (session_) {
    send_host_reports(true);
    sessions::RunEnd end{result.result.status, unix_now(), unix_now() - started_at_, {}};
    for (const auto& r : result.result.ranks) end.exit_codes.push_back({r.rank, r.exit_code});
    session_->send(end);
    session_->close();
    result.session_uid = session_->uid();
  }
  return result;
}

std::vector<HostsLauncher::Probe> HostsLauncher::probe() {
  probing_ = true;  // an unreachable host is a row of the table, not the end of the others
  SignalRouting routing(request_.launch.handle_signals ? wake_write_ : -1);
  start_transports();
  connect_all();
  if (!stopping_) {
    try {
      master_addr_ = master_address();
    } catch (const LaunchError&) {
      master_addr_ = request_.launch.master_addr;
    }
    send_jobs("probe");
    while (!all_nodes(Phase::kDone) && !stopping_) pump(200);
  }
  finish_transports();
  std::vector<Probe> probes;
  for (const auto& n : nodes_) probes.push_back({n.plan.host, n.facts, n.facts ? "" : n.lost_reason});
  return probes;
}

}  // namespace shardscope::launcher
