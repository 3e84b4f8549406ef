#pragma once
// `shardscope launch --hostfile ...` across machines: one node agent per host (node_agent.hpp),
// started by the chosen transport (node_transport.hpp), each given its job on a private channel;
// the launcher hosts the session's collector, relays every rank's output as `[host:rank]`, probes
// every host's clock, stops every rank on every host when one fails, is interrupted, or a host
// becomes unreachable, and names the first failure as host:rank. docs/launcher.md is the guide.

#include <chrono>
#include <deque>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <poll.h>

#include <nlohmann/json.hpp>

#include "launcher/agent_link.hpp"
#include "launcher/hosts_plan.hpp"
#include "launcher/local_launcher.hpp"
#include "launcher/rank_output.hpp"
#include "launcher/run_doctor.hpp"
#include "sessions/environment_report.hpp"

namespace shardscope::launcher {

class LaunchSession;

/// Runs a multi-host launch to its end. Throws LaunchError before any rank started (bad flags, a
/// host that cannot be reached or cannot start its ranks: exit code 2; config errors: kConfig).
LaunchOutcome launch_on_hosts(const HostsRequest& request, std::ostream& out, std::ostream& err);

/// The launcher's watch over the node agents of every host (hosts_launcher.cpp: the phases;
/// hosts_launcher_events.cpp: the poll loop and what each event means).
class HostsLauncher {
 public:
  HostsLauncher(HostsRequest request, std::ostream& out, std::ostream& err);
  ~HostsLauncher();
  HostsLauncher(const HostsLauncher&) = delete;
  HostsLauncher& operator=(const HostsLauncher&) = delete;

  /// The training run (or, for the preflight, any rank command) on every host.
  LaunchOutcome run();
  /// The preflight's probe: every host's facts, or why it could not be reached.
  struct Probe {
    std::string host;
    std::optional<HostFacts> facts;
    std::string problem;  ///< why there are no facts
  };
  std::vector<Probe> probe();

 private:
  enum class Phase { kConnecting, kReady, kRunning, kDone, kLost };
  struct Node {
    PlannedNode plan;
    AgentLink link;
    Phase phase = Phase::kConnecting;
    nlohmann::json hello;
    std::vector<StartedRank> started;
    bool has_started = false;
    std::optional<nlohmann::json> done;
    std::optional<HostFacts> facts;
    std::string lost_reason;
    std::optional<std::size_t> transport;            ///< ssh: its own transport process
    std::optional<AgentClock::time_point> link_ended; ///< EOF seen; the verdict waits for ssh's exit status
    std::string ended_why;                            ///< what the channel said when it ended
  };
  struct Transport {
    TransportProcess spec;
    std::optional<RankProcess> process;
    LineSplitter out_lines, err_lines;
    std::deque<std::string> err_tail;
    std::optional<int> wait_status;
  };
  struct Failure {
    std::string who;          ///< "host:rank", or the host
    std::string description;  ///< "was killed by signal 9 (SIGKILL)", "became unreachable (...)"
    int exit_code = 1;
    std::optional<std::size_t> node;
    bool before_start = false;  ///< nothing ran: the launch failed to start (exit code 2)
    bool signaled = false;      ///< a rank killed by a signal
    bool rank_failed = false;   ///< a rank's exit (not a host or a job that could not start)
  };

  // hosts_launcher.cpp
  void start_transports();
  void connect_all();
  void configure_run();
  void send_jobs(const std::string& kind);
  void finish_transports();
  LaunchOutcome outcome();
  void report_end(const LaunchOutcome& outcome);
  void send_run_start();
  void send_host_reports(bool with_exit_codes);
  std::string master_address();

  // hosts_launcher_events.cpp
  struct Source {
    enum Kind { kWake, kListen, kPending, kLinkRead, kLinkWrite, kOut, kErr, kExit } kind;
    std::size_t index;
  };
  struct PollSet {
    std::vector<pollfd> fds;
    std::vector<Source> sources;
  };
  void pump(int timeout_ms);
  PollSet poll_set() const;
  void on_ready(const Source& source);
  void read_signals();
  void read_pending_agent(int fd);
  void read_link(std::size_t node);
  void read_transport(Transport& t, bool from_stderr);
  void reap_transport(std::size_t transport);
  void consult_doctor();
  void on_message(std::size_t node, const nlohmann::json& message);
  void on_line(const Node& node, const nlohmann::json& message);
  void on_rank_exit(Node& node, const nlohmann::json& message);
  void on_link_lost(std::size_t node, const std::string& why);
  void mark_lost(std::size_t node, const std::string& why);
  void decide_lost_links();
  void drain(Transport& t);
  void judge_exits_of_round();
  void on_transport_line(Transport& t, bool from_stderr, const std::string& line);
  void on_transport_exit(std::size_t transport);
  void on_arrived(ArrivedAgent agent);
  void on_signal(int signal);
  void fail_first(Failure failure);
  /// Tells every host to stop its ranks (but `except`, whose own supervisor is stopping them).
  void stop_all(int signal, std::optional<std::size_t> except = std::nullopt);
  void keep_time();
  void message(const std::string& text, sessions::LogLevel level);
  bool all_nodes(Phase at_least) const;
  std::optional<std::size_t> node_of_identity(const std::string& identity) const;

  HostsRequest request_;
  std::ostream& out_;
  std::ostream& err_;
  HostsPlan plan_;
  std::vector<Node> nodes_;
  std::vector<Transport> transports_;
  std::unique_ptr<AgentRendezvous> rendezvous_;
  std::string mpi_hostfile_;
  std::unique_ptr<RunDoctor> doctor_;  ///< before session_: the collector it watches stops first
  std::unique_ptr<LaunchSession> session_;
  int wake_read_ = -1, wake_write_ = -1;
  std::string master_addr_, config_json_, cwd_;
  sessions::EnvironmentReport environment_;
  double started_at_ = 0;
  bool stopping_ = false, killed_ = false, gave_up_ = false, run_start_sent_ = false, probing_ = false;
  std::vector<Failure> exits_this_round_;
  int interrupt_signal_ = 0;
  std::optional<Failure> failure_;
  AgentClock::time_point stop_started_, next_ping_, next_doctor_tick_;
  std::string stopped_hung_;  ///< why the doctor stopped the run (--on-hang stop)
};

}  // namespace shardscope::launcher
