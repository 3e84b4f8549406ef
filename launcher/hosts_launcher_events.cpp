// HostsLauncher's poll loop and what each event means: agent messages (lines, rank exits, the end
// of a host's ranks), lost links, transport output and exits, connect-back arrivals, signals,
// clock probes and the stop escalation.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ostream>

#include "launcher/hosts_launcher.hpp"
#include "launcher/launch_session.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

constexpr auto kPingPeriod = std::chrono::seconds(1);
constexpr auto kDoctorPeriod = std::chrono::seconds(1);
// After an ssh channel's end of file, how long its exit status may take to arrive (it names why).
constexpr auto kExitStatusWait = std::chrono::seconds(2);
// While stopping: SIGKILL this long after the grace, then give up on hosts that still do not answer.
constexpr double kKillAfterGraceS = 5, kGiveUpAfterGraceS = 15;
constexpr std::size_t kTransportTailLines = 20;

using sessions::unix_now;

bool failed(int wait_status) { return !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0); }

std::string last_lines(const std::deque<std::string>& tail, std::size_t count) {
  std::string text;
  for (std::size_t i = tail.size() > count ? tail.size() - count : 0; i < tail.size(); ++i)
    text += (text.empty() ? "" : " | ") + tail[i];
  return text;
}

}  // namespace

void HostsLauncher::message(const std::string& text, sessions::LogLevel level) {
  err_ << "shardscope launch: " << text << std::endl;
  if (session_) session_->send(sessions::LogLine{-1, unix_now(), level, text});
}

bool HostsLauncher::all_nodes(Phase at_least) const {
  for (const auto& n : nodes_)
    if (n.phase < at_least) return false;
  return true;
}

std::optional<std::size_t> HostsLauncher::node_of_identity(const std::string& identity) const {
  const auto eq = identity.find('=');
  if (eq == std::string::npos) return std::nullopt;
  const std::string kind = identity.substr(0, eq), value = identity.substr(eq + 1);
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if ((kind == "host" && nodes_[i].plan.host == value) || (kind == "node" && std::to_string(i) == value)) return i;
  return std::nullopt;
}

void HostsLauncher::fail_first(Failure failure) {
  if (failure_ || (stopping_ && !failure.before_start)) return;
  message(failure.who + " " + failure.description + "; stopping every rank on every host", sessions::LogLevel::kError);
  failure_ = std::move(failure);
  // A rank's own host is stopping its other ranks already (its supervisor saw the exit first).
  stop_all(SIGTERM, failure_->rank_failed ? failure_->node : std::nullopt);
}

void HostsLauncher::stop_all(int signal, std::optional<std::size_t> except) {
  if (signal == SIGKILL) killed_ = true;
  if (!stopping_) stop_started_ = AgentClock::now();
  stopping_ = true;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (except && i == *except && signal != SIGKILL) continue;
    if (n.phase == Phase::kReady || n.phase == Phase::kRunning) {
      json stop = message_of("stop");
      stop["signal"] = signal;
      n.link.send(stop);
    } else if (n.phase == Phase::kConnecting && n.transport) {
      transports_[*n.transport].process->signal_group(SIGTERM);  // an ssh still connecting
    }
  }
}

void HostsLauncher::on_signal(int signal) {
  if (signal != SIGINT && signal != SIGTERM) return;
  if (stopping_) {
    message("received " + signal_name(signal) + " again: killing every rank on every host now (SIGKILL)",
            sessions::LogLevel::kWarning);
    stop_all(SIGKILL);
    return;
  }
  interrupt_signal_ = signal;
  message("received " + signal_name(signal) + ": telling every host to stop its ranks; they get SIGKILL if still "
          "running in " + std::to_string(static_cast<int>(request_.launch.grace_seconds)) + " s (send it again to "
          "kill them now)", sessions::LogLevel::kWarning);
  stop_all(signal);
}

void HostsLauncher::on_line(const Node& node, const json& m) {
  const int rank = m.value("rank", -1);
  const auto level = static_cast<sessions::LogLevel>(m.value("level", 1));
  const std::string text = m.value("text", "");
  if (rank >= 0) {
    std::ostream& stream = level == sessions::LogLevel::kInfo ? out_ : err_;
    stream << "[" << host_rank(node.plan.host, rank) << "] " << text << '\n' << std::flush;
  } else {
    err_ << "shardscope launch: [" << node.plan.host << "] " << text << std::endl;
  }
  if (session_)
    session_->send(sessions::LogLine{rank, m.value("time", unix_now()), level,
                                     rank >= 0 ? text : node.plan.host + ": " + text});
}

void HostsLauncher::on_rank_exit(Node& node, const json& m) {
  const int status = m.value("wait_status", 0);
  if (!failed(status)) return;
  const int rank = m.value("rank", -1);
  Failure f;
  f.who = host_rank(node.plan.host, rank);
  f.description = "(pid " + std::to_string(m.value("pid", 0)) + ") " + describe_wait_status(status);
  f.exit_code = shell_exit_code(status);
  f.node = static_cast<std::size_t>(&node - nodes_.data());
  f.signaled = WIFSIGNALED(status);
  f.rank_failed = true;
  exits_this_round_.push_back(std::move(f));
}

// Ranks seen failing in the same round: one killed by a signal is the likelier cause (its peers on
// other hosts then fail on a broken connection), then the first reported.
void HostsLauncher::judge_exits_of_round() {
  if (exits_this_round_.empty()) return;
  std::stable_sort(exits_this_round_.begin(), exits_this_round_.end(),
                   [](const Failure& a, const Failure& b) { return a.signaled && !b.signaled; });
  fail_first(std::move(exits_this_round_.front()));
  exits_this_round_.clear();
}

void HostsLauncher::on_message(std::size_t index, const json& m) {
  Node& node = nodes_[index];
  const std::string type = m.value("type", "");
  if (type == "hello" && node.phase == Phase::kConnecting) {
    node.hello = m;
    node.phase = Phase::kReady;
  } else if (type == "pong") {
    node.link.pong(m);
  } else if (type == "line") {
    on_line(node, m);
  } else if (type == "started") {
    std::string pids;
    for (const auto& r : m.value("ranks", json::array())) {
      node.started.push_back({r.value("rank", 0), r.value("local_rank", 0), static_cast<pid_t>(r.value("pid", 0)),
                              r.value("device", "")});
      const auto& s = node.started.back();
      pids += (pids.empty() ? "" : ", ") + std::string("rank ") + std::to_string(s.rank) + " pid " +
              std::to_string(s.pid) + " (" + s.device + ")";
    }
    node.has_started = true;
    message("[" + node.plan.host + "] " + pids, sessions::LogLevel::kInfo);
    send_run_start();
  } else if (type == "exit") {
    on_rank_exit(node, m);
  } else if (type == "done") {
    node.done = m;
    node.phase = Phase::kDone;
  } else if (type == "facts") {
    node.facts = facts_from_json(m);
    node.phase = Phase::kDone;
  } else if (type == "error") {
    Failure f;
    f.who = node.plan.host;
    f.description = "could not start its ranks: " + m.value("message", std::string("(no reason given)"));
    f.exit_code = 2;
    f.node = index;
    f.before_start = true;
    node.phase = Phase::kDone;
    fail_first(std::move(f));
  }
}

void HostsLauncher::on_link_lost(std::size_t index, const std::string& why) {
  Node& node = nodes_[index];
  if (node.phase == Phase::kDone || node.phase == Phase::kLost || node.link_ended) return;
  if (node.transport) {
    node.link_ended = AgentClock::now();  // ssh's exit status, due any moment, says why
    node.ended_why = why;
    return;
  }
  mark_lost(index, why);
}

void HostsLauncher::mark_lost(std::size_t index, const std::string& why) {
  Node& node = nodes_[index];
  if (node.phase == Phase::kDone || node.phase == Phase::kLost) return;
  node.phase = Phase::kLost;
  node.lost_reason = why;
  node.link.close();
  if (node.transport && !transports_[*node.transport].wait_status)
    transports_[*node.transport].process->signal_group(SIGTERM);  // its agent stops its ranks on the end of its channel
  if (probing_) return;
  Failure f;
  f.who = "host " + node.plan.host;
  const char* what = node.has_started        ? "became unreachable ("
                     : node.hello.is_object() ? "failed before its ranks started ("
                                              : "could not be reached (";
  f.description = what + why + ")";
  f.node = index;
  f.before_start = !node.has_started;
  fail_first(std::move(f));
}

// The verdict on an ssh channel that ended: its exit status and last stderr lines name the cause.
void HostsLauncher::decide_lost_links() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (!node.link_ended || node.phase == Phase::kDone || node.phase == Phase::kLost) continue;
    Transport& t = transports_[*node.transport];
    if (!t.wait_status && AgentClock::now() - *node.link_ended < kExitStatusWait) continue;
    drain(t);
    // The last line is ssh's own verdict ("Timeout, server ... not responding."); the ones above
    // are often the remote login shell's noise (all are printed as they came).
    std::string why = t.wait_status ? t.spec.what + " " + describe_wait_status(*t.wait_status) : node.ended_why;
    if (t.wait_status && !t.err_tail.empty()) why += ": " + last_lines(t.err_tail, 1);
    mark_lost(i, why);
  }
}

// What a transport printed before it ended, read to the end.
void HostsLauncher::drain(Transport& t) {
  if (!t.process) return;
  for (bool from_stderr : {false, true}) {
    const int fd = from_stderr ? t.process->stderr_fd() : t.process->stdout_fd();
    if (fd < 0 || (!from_stderr && t.spec.node >= 0)) continue;
    char buffer[16 << 10];
    ssize_t n = 0;
    LineSplitter& lines = from_stderr ? t.err_lines : t.out_lines;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
      for (const auto& line : lines.append(buffer, static_cast<std::size_t>(n))) on_transport_line(t, from_stderr, line);
  }
}

void HostsLauncher::on_transport_line(Transport& t, bool from_stderr, const std::string& line) {
  if (!from_stderr && rendezvous_) {
    if (const auto token = parse_agent_token_line(line)) {
      rendezvous_->add_token(token->first, token->second);
      return;  // never printed: the token seals that agent's channel
    }
  }
  t.err_tail.push_back(line);
  if (t.err_tail.size() > kTransportTailLines) t.err_tail.pop_front();
  err_ << "shardscope launch: " << t.spec.what << ": " << line << std::endl;
}

void HostsLauncher::on_transport_exit(std::size_t index) {
  Transport& t = transports_[index];
  drain(t);
  if (t.spec.node >= 0) return;  // ssh: decide_lost_links() reads the status
  // pdsh, mpirun, srun carry every agent: the ones that never connected are lost with it.
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].phase != Phase::kDone && nodes_[i].phase != Phase::kLost && !nodes_[i].link.attached())
      mark_lost(i, t.spec.what + " " + describe_wait_status(*t.wait_status) +
                       (t.err_tail.empty() ? "" : ": " + last_lines(t.err_tail, 1)));
}

void HostsLauncher::on_arrived(ArrivedAgent agent) {
  const auto index = node_of_identity(agent.identity);
  if (!index || nodes_[*index].link.attached()) {
    message("warning: a second or unknown node agent (" + agent.identity + ") connected; closed",
            sessions::LogLevel::kWarning);
    ::close(agent.fd);
    return;
  }
  nodes_[*index].link.attach(agent.fd, agent.fd, true, std::move(agent.codec));
  on_message(*index, agent.hello);
}

void HostsLauncher::keep_time() {
  const auto now = AgentClock::now();
  if (now >= next_ping_) {
    for (auto& n : nodes_)
      if (n.phase == Phase::kReady || n.phase == Phase::kRunning) n.link.ping();
    next_ping_ = now + kPingPeriod;
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if ((n.phase == Phase::kReady || n.phase == Phase::kRunning) && !n.link_ended &&
        now - n.link.last_heard > std::chrono::duration<double>(request_.link_timeout_s))
      on_link_lost(i, "no answer from its agent for " + std::to_string(static_cast<int>(request_.link_timeout_s)) + " s");
  }
  decide_lost_links();
  if (!stopping_) return;
  const double stopping_for = std::chrono::duration<double>(now - stop_started_).count();
  if (!killed_ && stopping_for > request_.launch.grace_seconds + kKillAfterGraceS) {
    message("some hosts still had ranks running " + std::to_string(static_cast<int>(stopping_for)) +
                " s after being told to stop; sending SIGKILL", sessions::LogLevel::kWarning);
    stop_all(SIGKILL);
  }
  if (!gave_up_ && stopping_for > request_.launch.grace_seconds + kGiveUpAfterGraceS) {
    gave_up_ = true;
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].phase != Phase::kDone && nodes_[i].phase != Phase::kLost) {
        mark_lost(i, "it did not report its ranks stopped");
      }
  }
}

// The descriptors the loop waits on, each with what it stands for.
HostsLauncher::PollSet HostsLauncher::poll_set() const {
  PollSet set;
  auto add = [&](int fd, short events, Source::Kind kind, std::size_t index) {
    if (fd < 0) return;
    set.fds.push_back({fd, events, 0});
    set.sources.push_back({kind, index});
  };
  add(wake_read_, POLLIN, Source::kWake, 0);
  if (rendezvous_) {
    add(rendezvous_->listen_fd(), POLLIN, Source::kListen, 0);
    for (int fd : rendezvous_->pending_fds()) add(fd, POLLIN, Source::kPending, static_cast<std::size_t>(fd));
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].link.attached() || nodes_[i].link_ended) continue;
    add(nodes_[i].link.read_fd(), POLLIN, Source::kLinkRead, i);
    add(nodes_[i].link.pending_write_fd(), POLLOUT, Source::kLinkWrite, i);
  }
  for (std::size_t t = 0; t < transports_.size(); ++t) {
    if (!transports_[t].process || transports_[t].wait_status) continue;
    const auto& p = *transports_[t].process;
    if (transports_[t].spec.node < 0) add(p.stdout_fd(), POLLIN, Source::kOut, t);  // ssh's stdout is the channel
    add(p.stderr_fd(), POLLIN, Source::kErr, t);
    add(p.exit_fd(), POLLIN, Source::kExit, t);
  }
  return set;
}

void HostsLauncher::read_signals() {
  unsigned char signals[64];
  ssize_t n = 0;
  while ((n = ::read(wake_read_, signals, sizeof signals)) > 0)
    for (ssize_t i = 0; i < n; ++i) on_signal(signals[i]);
}

void HostsLauncher::read_pending_agent(int fd) {
  std::vector<std::string> refused;
  if (auto agent = rendezvous_->read_pending(fd, refused)) on_arrived(std::move(*agent));
  for (const auto& why : refused) message("warning: refused " + why, sessions::LogLevel::kWarning);
}

void HostsLauncher::read_link(std::size_t node) {
  try {
    for (const auto& m : nodes_[node].link.read_available()) on_message(node, m);
  } catch (const ChannelError& e) {
    on_link_lost(node, e.what());
  }
}

void HostsLauncher::read_transport(Transport& t, bool from_stderr) {
  const int fd = from_stderr ? t.process->stderr_fd() : t.process->stdout_fd();
  char buffer[16 << 10];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  LineSplitter& lines = from_stderr ? t.err_lines : t.out_lines;
  if (n > 0) {
    for (const auto& line : lines.append(buffer, static_cast<std::size_t>(n))) on_transport_line(t, from_stderr, line);
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    if (auto rest = lines.finish()) on_transport_line(t, from_stderr, *rest);
    from_stderr ? t.process->close_stderr() : t.process->close_stdout();
  }
}

void HostsLauncher::reap_transport(std::size_t transport) {
  if (auto status = transports_[transport].process->try_reap()) {
    transports_[transport].wait_status = *status;
    on_transport_exit(transport);
  }
}

void HostsLauncher::on_ready(const Source& s) {
  switch (s.kind) {
    case Source::kWake: read_signals(); break;
    case Source::kListen: rendezvous_->accept_all(); break;
    case Source::kPending: read_pending_agent(static_cast<int>(s.index)); break;
    case Source::kLinkRead: read_link(s.index); break;
    case Source::kLinkWrite: nodes_[s.index].link.flush(); break;
    case Source::kOut: read_transport(transports_[s.index], false); break;
    case Source::kErr: read_transport(transports_[s.index], true); break;
    case Source::kExit: reap_transport(s.index); break;
  }
}

// The run doctor, about once a second while the ranks run: its findings printed and stored, and a
// hang under --on-hang stop ends the run.
void HostsLauncher::consult_doctor() {
  const auto now = AgentClock::now();
  if (!doctor_ || stopping_ || !run_start_sent_ || now < next_doctor_tick_) return;
  next_doctor_tick_ = now + kDoctorPeriod;
  std::string why = doctor_->tick(err_, session_.get());
  if (why.empty()) return;
  message(why, sessions::LogLevel::kError);
  stopped_hung_ = std::move(why);
  stop_all(SIGTERM);
}

void HostsLauncher::pump(int timeout_ms) {
  PollSet set = poll_set();
  if (::poll(set.fds.data(), set.fds.size(), timeout_ms) < 0) return;  // EINTR: the signal is in the wake pipe
  for (std::size_t k = 0; k < set.fds.size(); ++k)
    if (set.fds[k].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR)) on_ready(set.sources[k]);
  if (rendezvous_) rendezvous_->drop_expired();  // intruders that never proved themselves
  judge_exits_of_round();
  keep_time();
  consult_doctor();
}

}  // namespace shardscope::launcher
