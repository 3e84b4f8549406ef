#include "launcher/node_agent.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "launcher/agent_channel.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_plan.hpp"
#include "sessions/net_address.hpp"
#include "launcher/node_job.hpp"
#include "launcher/port_check.hpp"
#include "launcher/rank_supervisor.hpp"
#include "sessions/build_info.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/tcp_connect.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kJobTimeoutMs = 60000;  // the launcher sends the job right after the hello

using sessions::unix_now;

using sessions::host_name;

json hello_message() {
  json hello = message_of("hello");
  hello["hostname"] = host_name();
  hello["shardscope_version"] = sessions::build_info().version;
  hello["git_hash"] = sessions::build_info().git_hash;
  hello["pid"] = static_cast<long long>(::getpid());
  hello["addresses"] = sessions::host_addresses();  // `hostname -I`: the first is DeepSpeed's master_addr
  return hello;
}

// The answer to a clock probe: this host's clock, as close to reading the ping as possible.
json pong_for(const json& ping) {
  json pong = message_of("pong");
  pong["seq"] = ping.value("seq", 0);
  pong["time"] = unix_now();
  return pong;
}

json line_message(const sessions::LogLine& line) {
  json m = message_of("line");
  m.update({{"rank", line.rank}, {"time", line.time}, {"level", static_cast<int>(line.level)}, {"text", line.text}});
  return m;
}

json done_message(const SupervisorResult& r) {
  json ranks = json::array();
  for (const auto& x : r.ranks)
    ranks.push_back({{"rank", x.rank}, {"pid", x.pid}, {"wait_status", x.wait_status}, {"exit_code", x.exit_code},
                     {"stopped_by_launcher", x.stopped_by_launcher}});
  json m = message_of("done");
  m.update({{"status", r.status}, {"exit_code", r.exit_code}, {"ranks", ranks},
            {"first_failed_rank", r.first_failed_rank ? json(*r.first_failed_rank) : json(nullptr)},
            {"first_failure", r.first_failure}, {"stderr_tail", r.first_failure_stderr},
            {"interrupt_signal", r.interrupt_signal}, {"killed_after_grace", r.killed_after_grace},
            {"wall_seconds", r.wall_seconds}});
  return m;
}

// Sends without throwing: a launcher that is gone is noticed by the reader, which stops the ranks.
void send_quietly(BlockingChannel& channel, const json& message, std::atomic<bool>& gone) {
  if (gone) return;
  try {
    channel.send(message);
  } catch (const ChannelError&) {
    gone = true;
  }
}

// The launcher's side of the conversation while the ranks run: clock probes, stop requests, and
// silence or a closed channel, after which the ranks are stopped (SIGTERM, SIGKILL after the grace).
// After silence the channel may still carry the final "done" (a launcher that is only slow reads it).
void listen_to_launcher(BlockingChannel& channel, RankSupervisor& supervisor, const NodeJob& job,
                        std::atomic<bool>& finished, std::atomic<bool>& gone, std::atomic<bool>& silent) {
  auto last_heard = Clock::now();
  while (!finished) {
    std::optional<json> message;
    try {
      message = channel.receive(200);
    } catch (const ChannelError& e) {
      std::cerr << "shardscope node (" << job.host << "): " << e.what() << "; stopping this host's ranks" << std::endl;
      gone = true;
      supervisor.request_stop(SIGTERM);
      return;
    }
    if (!message) {
      if (Clock::now() - last_heard > std::chrono::duration<double>(job.launcher_timeout_s)) {
        std::cerr << "shardscope node (" << job.host << "): nothing from the launcher for " << job.launcher_timeout_s
                  << " s; stopping this host's ranks" << std::endl;
        silent = true;
        supervisor.request_stop(SIGTERM);
        return;
      }
      continue;
    }
    last_heard = Clock::now();
    const std::string type = message->value("type", "");
    if (type == "ping") {
      send_quietly(channel, pong_for(*message), gone);
    } else if (type == "stop") {
      supervisor.request_stop(message->value("signal", SIGTERM));
    }
  }
}

// Plans this host's ranks; a LaunchError is the job's fault and goes back to the launcher.
LaunchPlan plan_ranks(const NodeJob& job, const NodeAgentOptions& options) {
  if (!job.cwd.empty() && ::chdir(job.cwd.c_str()) != 0)
    throw LaunchError(LaunchError::Kind::kEnvironment,
                      "cannot enter " + job.cwd + " (" + std::strerror(errno) + "): ranks run in the launcher's "
                      "directory, which must exist on every host (a shared file system, or the same path)");
  LaunchPlan plan = make_launch_plan(launch_request_for(job, options.program));
  if (job.node_rank == 0) check_master_port_free(job.master_addr, job.master_port);
  if (job.collector) attach_session(plan, *job.collector, job_secret(job));
  return plan;
}

int run_job(BlockingChannel& channel, const NodeJob& job, const NodeAgentOptions& options) {
  std::atomic<bool> finished{false}, gone{false}, silent{false};
  LaunchPlan plan;
  try {
    plan = plan_ranks(job, options);
  } catch (const LaunchError& e) {
    json error = message_of("error");
    error["message"] = e.what();
    send_quietly(channel, error, gone);
    return 2;
  }
  for (const auto& note : plan.notes)
    send_quietly(channel, line_message({-1, unix_now(), sessions::LogLevel::kInfo, note}), gone);
  SupervisorOptions o;
  o.ranks = plan.ranks;
  o.grace_seconds = job.grace_seconds;
  o.each_rank_log_dir = job.each_rank_log_dir;
  o.on_line = [&](const sessions::LogLine& line) { send_quietly(channel, line_message(line), gone); };
  o.on_started = [&](const std::vector<StartedRank>& started) {
    json ranks = json::array();
    for (const auto& s : started)
      ranks.push_back({{"rank", s.rank}, {"local_rank", s.local_rank}, {"pid", s.pid}, {"device", s.device}});
    json m = message_of("started");
    m["ranks"] = ranks;
    send_quietly(channel, m, gone);
  };
  o.on_rank_exit = [&](const RankResult& r) {
    json m = message_of("exit");
    m.update({{"rank", r.rank}, {"pid", r.pid}, {"wait_status", r.wait_status}});
    send_quietly(channel, m, gone);
  };
  RankSupervisor supervisor(std::move(o));
  std::thread listener([&] { listen_to_launcher(channel, supervisor, job, finished, gone, silent); });
  SupervisorResult result;
  try {
    result = supervisor.run();
  } catch (const LaunchError& e) {
    finished = true;
    listener.join();
    json error = message_of("error");
    error["message"] = e.what();
    send_quietly(channel, error, gone);
    return 2;
  }
  finished = true;
  listener.join();
  send_quietly(channel, done_message(result), gone);
  return gone || silent ? 1 : 0;
}

// pdsh, mpirun and srun give the agent no stdin: it prints a token through the transport (which
// only the launcher reads) and connects back; both sides seal the channel with keys from it.
void open_sealed_channel(BlockingChannel& channel, const std::string& token, const NodeAgentOptions& options) {
  const std::string agent_nonce = sessions::hex_encode(sessions::random_bytes(32));
  json hello = message_of("agent");
  hello["id"] = options.identity;
  hello["nonce"] = agent_nonce;
  channel.send(hello);
  const auto answer = channel.receive(30000);
  if (!answer || answer->value("type", "") != "launcher" || !answer->contains("nonce") ||
      !answer->at("nonce").is_string())
    throw ChannelError("the launcher at " + options.connect + " did not answer the agent's hello");
  const std::string launcher_nonce = answer->at("nonce").get<std::string>();
  channel.codec().seal(derive_seal_keys(token, "agent", launcher_nonce, agent_nonce),
                       derive_seal_keys(token, "launcher", launcher_nonce, agent_nonce));
}

// Clock probes come before the job (the launcher measures every host's clock first).
std::optional<json> wait_for_job(BlockingChannel& channel) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(kJobTimeoutMs);
  while (Clock::now() < deadline) {
    const auto message = channel.receive(1000);
    if (!message) continue;
    const std::string type = message->value("type", "");
    if (type == "job") return message;
    if (type == "stop") return std::nullopt;
    if (type == "ping") channel.send(pong_for(*message));
  }
  throw ChannelError("no job from the launcher within " + std::to_string(kJobTimeoutMs / 1000) + " s");
}

}  // namespace

std::string identity_from_environment() {
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank && *rank) return std::string("node=") + rank;
  if (const char* node = std::getenv("SLURMD_NODENAME"); node && *node) return std::string("host=") + node;
  return "";
}

int serve_node_agent(BlockingChannel& channel, const NodeAgentOptions& options) {
  ::signal(SIGPIPE, SIG_IGN);  // a vanished launcher shows as EPIPE, not as a silent death
  try {
    channel.send(hello_message());
    const auto message = wait_for_job(channel);
    if (!message) return 0;  // the launcher gave up before sending a job
    const NodeJob job = job_from_json(*message);
    if (job.kind == "probe") {
      channel.send(facts_to_json(probe_host_facts(job)));
      return 0;
    }
    return run_job(channel, job, options);
  } catch (const ChannelError& e) {
    std::cerr << "shardscope node: " << e.what() << std::endl;
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "shardscope node: " << e.what() << " (the launcher and this host run different builds?)" << std::endl;
    return 2;
  }
}

int run_node_agent(const NodeAgentOptions& options) {
  if (options.connect.empty()) {
    BlockingChannel channel(STDIN_FILENO, STDOUT_FILENO);
    return serve_node_agent(channel, options);
  }
  const std::string token = sessions::hex_encode(sessions::random_bytes(32));
  std::printf("%s%s %s\n", kAgentTokenMarker, options.identity.c_str(), token.c_str());
  std::fflush(stdout);
  int fd = -1;
  try {
    const auto [host, port] = sessions::parse_host_port(options.connect);
    fd = sessions::connect_tcp(host, port, 10000);
    BlockingChannel channel(fd, fd);
    open_sealed_channel(channel, token, options);
    const int code = serve_node_agent(channel, options);
    ::close(fd);
    return code;
  } catch (const std::exception& e) {
    std::cerr << "shardscope node (" << options.identity << "): cannot reach the launcher at " << options.connect
              << ": " << e.what() << std::endl;
    if (fd >= 0) ::close(fd);
    return 1;
  }
}

}  // namespace shardscope::launcher
