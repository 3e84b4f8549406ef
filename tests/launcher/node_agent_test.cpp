// The node agent and its channel without a second machine: the agent served over pipes (as ssh
// would carry it) with /bin/sh scripts standing in for `shardscope train`; the sealed channel of
// connect-back transports; a real `shardscope node --connect` process meeting an AgentRendezvous.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "launcher/agent_channel.hpp"
#include "launcher/agent_link.hpp"
#include "launcher/node_agent.hpp"
#include "launcher/node_job.hpp"
#include "launcher/rank_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An agent served on pipes in a thread; the test plays the launcher through an AgentLink. The agent
// enters the job's directory (a process-wide chdir), so the test's own directory is restored after.
class AgentOverPipes {
 public:
  explicit AgentOverPipes(const std::string& script) {
    char cwd[4096] = {};
    if (::getcwd(cwd, sizeof cwd)) cwd_ = cwd;
    int to_agent[2], from_agent[2];
    if (::pipe2(to_agent, O_CLOEXEC) != 0 || ::pipe2(from_agent, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    ::fcntl(from_agent[0], F_SETFL, O_NONBLOCK);
    agent_in_ = to_agent[0];
    agent_out_ = from_agent[1];
    link_.attach(from_agent[0], to_agent[1], true);
    options_.program = "/bin/sh";
    thread_ = std::thread([this, script] {
      BlockingChannel channel(agent_in_, agent_out_);
      exit_code_ = serve_node_agent(channel, options_);
      ::close(agent_out_);
    });
    (void)script;
  }
  ~AgentOverPipes() {
    link_.close();
    if (thread_.joinable()) thread_.join();
    ::close(agent_in_);
    if (!cwd_.empty() && ::chdir(cwd_.c_str()) != 0) ADD_FAILURE() << "cannot return to " << cwd_;
  }
  AgentLink& link() { return link_; }
  /// The next message of `type` within `seconds` (others are kept in `seen`).
  std::optional<json> wait_for(const std::string& type, double seconds = 10) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      for (auto it = seen.begin(); it != seen.end(); ++it)
        if (it->value("type", "") == type) {
          json m = *it;
          seen.erase(it);
          return m;
        }
      try {
        for (auto& m : link_.read_available()) seen.push_back(std::move(m));
      } catch (const ChannelError&) {
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }
  int finish() {
    link_.close();
    thread_.join();
    return exit_code_;
  }
  std::vector<json> seen;

 private:
  int agent_in_ = -1, agent_out_ = -1;
  std::string cwd_;
  AgentLink link_;
  NodeAgentOptions options_;
  std::thread thread_;
  int exit_code_ = -1;
};

NodeJob cpu_job(const std::string& script, int first_rank) {
  NodeJob job;
  job.host = "node-b";
  job.node_rank = 1;
  job.node_count = 2;
  job.first_rank = first_rank;
  job.world_size = 4;
  job.slots = {0, 1};
  job.cpu = true;
  job.master_addr = "127.0.0.1";
  job.master_port = test::free_port();
  job.rank_command = script;
  job.rank_args = {"--steps", "3"};
  job.environment = {{"NCCL_DEBUG", "INFO"}, {"SHARDSCOPE_COLLECTOR_SECRET", "s3cret-value-not-on-argv-0123456789"}};
  job.grace_seconds = 2;
  job.launcher_timeout_s = 30;
  return job;
}

std::string script_file(const test::TempDir& dir, const std::string& body) {
  const std::string path = dir.file("rank.sh");
  std::ofstream(path) << body << "\n";
  return path;
}

TEST(NodeAgent, RunsItsHostsRanksWithGlobalNumbersAndRelaysEverything) {
  test::TempDir dir;
  const auto script = script_file(dir, "echo \"rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE cross=$CROSS_RANK/$CROSS_SIZE "
                                       "local_size=$LOCAL_SIZE nccl=$NCCL_DEBUG args=$*\"\n"
                                       "[ \"$RANK\" = 3 ] && { echo 'error: rank 3 fails' >&2; exit 5; }\nsleep 30");
  AgentOverPipes agent(script);
  const auto hello = agent.wait_for("hello");
  ASSERT_TRUE(hello);
  EXPECT_FALSE(hello->value("shardscope_version", "").empty());
  NodeJob job = cpu_job(script, 2);
  job.cwd = dir.file("");
  agent.link().send(job_to_json(job));
  const auto started = agent.wait_for("started");
  ASSERT_TRUE(started);
  ASSERT_EQ(started->at("ranks").size(), 2u);
  EXPECT_EQ(started->at("ranks")[0].value("rank", -1), 2);
  EXPECT_EQ(started->at("ranks")[1].value("local_rank", -1), 1);
  const auto exit = agent.wait_for("exit");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->value("rank", -1), 3);
  const auto done = agent.wait_for("done", 20);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->value("status", ""), "failed");
  EXPECT_EQ(done->value("first_failed_rank", -1), 3);
  EXPECT_EQ(done->value("exit_code", 0), 5);
  bool saw_rank_line = false, saw_error = false;
  for (const auto& m : agent.seen) {
    if (m.value("type", "") != "line") continue;
    const std::string text = m.value("text", "");
    if (m.value("rank", -1) == 2 && contains(text, "rank=2 local=0 world=4 cross=1/2 local_size=2 nccl=INFO args=--steps 3 --device cpu"))
      saw_rank_line = true;
    saw_error |= m.value("rank", -1) == 3 && text == "error: rank 3 fails" && m.value("level", 0) == 3;
  }
  EXPECT_TRUE(saw_rank_line);
  EXPECT_TRUE(saw_error);
  for (const auto& r : done->at("ranks")) EXPECT_TRUE(test::process_gone(r.value("pid", 0)));
  EXPECT_EQ(agent.finish(), 0);
}

TEST(NodeAgent, StopsItsRanksWhenTheLauncherSaysSoOrGoesAway) {
  test::TempDir dir;
  const auto script = script_file(dir, "sleep 30");
  {
    AgentOverPipes agent(script);
    ASSERT_TRUE(agent.wait_for("hello"));
    agent.link().send(job_to_json(cpu_job(script, 0)));
    ASSERT_TRUE(agent.wait_for("started"));
    const auto start = Clock::now();
    json stop = message_of("stop");
    stop["signal"] = SIGTERM;
    agent.link().send(stop);
    const auto done = agent.wait_for("done");
    ASSERT_TRUE(done);
    EXPECT_EQ(done->value("status", ""), "interrupted");
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  }
  // The channel closes (ssh died): the agent stops its ranks on its own and says it lost the launcher.
  AgentOverPipes agent(script);
  ASSERT_TRUE(agent.wait_for("hello"));
  agent.link().send(job_to_json(cpu_job(script, 0)));
  const auto started = agent.wait_for("started");
  ASSERT_TRUE(started);
  const auto start = Clock::now();
  EXPECT_EQ(agent.finish(), 1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
  for (const auto& r : started->at("ranks")) EXPECT_TRUE(test::process_gone(r.value("pid", 0)));
}

TEST(NodeAgent, AnswersClockProbesAndStopsWhenTheLauncherFallsSilent) {
  test::TempDir dir;
  const auto script = script_file(dir, "sleep 30");
  AgentOverPipes agent(script);
  ASSERT_TRUE(agent.wait_for("hello"));
  NodeJob job = cpu_job(script, 0);
  job.launcher_timeout_s = 1;
  agent.link().send(job_to_json(job));
  ASSERT_TRUE(agent.wait_for("started"));
  agent.link().ping();
  const auto pong = agent.wait_for("pong");
  ASSERT_TRUE(pong);
  EXPECT_TRUE(agent.link().pong(*pong));
  ASSERT_TRUE(agent.link().clock().offset_s);
  EXPECT_LT(std::abs(*agent.link().clock().offset_s), 0.05);  // one clock: the offset is the probe's error
  const auto done = agent.wait_for("done", 10);  // no more pings: after 1 s the agent stops its ranks
  ASSERT_TRUE(done);
  EXPECT_EQ(done->value("status", ""), "interrupted");
}

TEST(NodeAgent, AJobThatCannotStartComesBackAsAnErrorNamingTheCause) {
  test::TempDir dir;
  const auto script = script_file(dir, "true");
  AgentOverPipes agent(script);
  ASSERT_TRUE(agent.wait_for("hello"));
  NodeJob job = cpu_job(script, 0);
  job.cwd = "/nonexistent/launch/dir";
  agent.link().send(job_to_json(job));
  const auto error = agent.wait_for("error");
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->value("message", ""), "cannot enter /nonexistent/launch/dir")) << error->dump();
  EXPECT_EQ(agent.finish(), 2);
}

TEST(AgentChannel, SealedFramesRoundTripAndAnyTamperingIsRefused) {
  const std::string token = "0123456789abcdef0123456789abcdef0123456789abcdef";
  MessageCodec launcher, agent;
  launcher.seal(derive_seal_keys(token, "launcher", "ln", "an"), derive_seal_keys(token, "agent", "ln", "an"));
  agent.seal(derive_seal_keys(token, "agent", "ln", "an"), derive_seal_keys(token, "launcher", "ln", "an"));
  json job = message_of("job");
  job["environment"] = {{"WANDB_API_KEY", "very-secret"}};
  const std::string frame = launcher.encode(job);
  EXPECT_FALSE(contains(frame, "very-secret")) << "the job must not travel in clear text";
  agent.feed(frame.data(), frame.size());
  EXPECT_EQ(agent.next(), job);
  // The same frame again (a replay) fails: its sequence number is spent.
  agent.feed(frame.data(), frame.size());
  EXPECT_THROW(agent.next(), ChannelError);
  // One flipped bit fails its tag.
  MessageCodec fresh;
  fresh.seal(derive_seal_keys(token, "agent", "ln", "an"), derive_seal_keys(token, "launcher", "ln", "an"));
  MessageCodec sender;
  sender.seal(derive_seal_keys(token, "launcher", "ln", "an"), derive_seal_keys(token, "agent", "ln", "an"));
  std::string tampered = sender.encode(job);
  tampered[10] ^= 1;
  fresh.feed(tampered.data(), tampered.size());
  EXPECT_THROW(fresh.next(), ChannelError);
  // Another token (an impostor that read the command line) cannot open it either.
  MessageCodec impostor;
  impostor.seal(derive_seal_keys("not-the-token-at-all-0123456789abcdef", "agent", "ln", "an"),
                derive_seal_keys("not-the-token-at-all-0123456789abcdef", "launcher", "ln", "an"));
  MessageCodec honest;
  honest.seal(derive_seal_keys(token, "launcher", "ln", "an"), derive_seal_keys(token, "agent", "ln", "an"));
  const std::string sealed = honest.encode(job);
  impostor.feed(sealed.data(), sealed.size());
  EXPECT_THROW(impostor.next(), ChannelError);
  EXPECT_EQ(parse_agent_token_line("10.0.0.2: SHARDSCOPE-NODE host=10.0.0.2 " + token),
            (std::pair<std::string, std::string>{"host=10.0.0.2", token}));
  EXPECT_FALSE(parse_agent_token_line("10.0.0.2: some other line"));
}

// The real binary, as pdsh/mpirun/srun start it: it prints its token on stdout, connects back,
// and its sealed hello arrives at the rendezvous only once the token came through.
TEST(NodeAgent, ConnectsBackAndProvesItselfWithTheTokenItPrinted) {
  AgentRendezvous rendezvous("127.0.0.1");
  RankCommand command;
  command.program = SHARDSCOPE_CLI_PATH;
  command.argv = {SHARDSCOPE_CLI_PATH, "node", "--connect", rendezvous.address(), "--node_rank", "0"};
  command.env = {"PATH=/usr/bin:/bin"};
  RankProcess agent = RankProcess::spawn(command);
  std::string out;
  std::optional<ArrivedAgent> arrived;
  std::vector<std::string> refused;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!arrived && Clock::now() < deadline) {
    char buffer[4096];
    const ssize_t n = ::read(agent.stdout_fd(), buffer, sizeof buffer);
    if (n > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
      if (const auto token = parse_agent_token_line(out)) rendezvous.add_token(token->first, token->second);
    }
    rendezvous.accept_all();
    for (int fd : rendezvous.pending_fds()) arrived = rendezvous.read_pending(fd, refused);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(arrived) << "agent output: " << out;
  EXPECT_TRUE(refused.empty());
  EXPECT_EQ(arrived->identity, "node=0");
  EXPECT_EQ(arrived->hello.value("type", ""), "hello");
  AgentLink link;
  link.attach(arrived->fd, arrived->fd, true, std::move(arrived->codec));
  link.send(message_of("stop"));  // no job: the agent leaves
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (!agent.try_reap() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(agent.exited());
}

// Resident memory of this process in KiB (VmRSS).
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

int connect_loopback(const std::string& address) {
  const auto colon = address.rfind(':');
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where), 0);
  return fd;
}

// Issue 31: 100 connections by another user took the launcher from 357 to 767 MB (4 MiB buffered
// per half-sent frame, no cap, no deadline). Now 300 idle connections and 100 that announce a 4 MiB
// frame and trickle it cost little, are capped at kMaxPendingAgents, and the real agent still arrives.
TEST(NodeAgent, IntrudersOnTheRendezvousAreCappedAndCostLittleAndTheAgentStillArrives) {
  AgentRendezvous rendezvous("127.0.0.1");
  const long before = resident_kib();
  std::vector<int> intruders;
  std::vector<std::string> refused;
  for (int i = 0; i < 400; ++i) {
    intruders.push_back(connect_loopback(rendezvous.address()));
    if (i >= 300) {
      const std::uint32_t length = 4u << 20;
      std::string partial(reinterpret_cast<const char*>(&length), 4);
      partial += std::string(60000, 'x');
      [[maybe_unused]] const auto n = ::send(intruders.back(), partial.data(), partial.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (i % 50 == 49) {
      rendezvous.accept_all();
      for (int fd : rendezvous.pending_fds()) rendezvous.read_pending(fd, refused);
    }
    // Once the idle ones are past the grace, the next ones shed them (and are read, and refused).
    if (i == 299) std::this_thread::sleep_for(kPendingAgentGrace + std::chrono::milliseconds(50));
  }
  rendezvous.accept_all();
  for (int fd : rendezvous.pending_fds()) rendezvous.read_pending(fd, refused);
  EXPECT_LE(rendezvous.pending_fds().size(), kMaxPendingAgents);
  EXPECT_GE(refused.size(), 1u);
  EXPECT_LT(resident_kib() - before, 32 << 10) << "KiB grown for 400 intruders";
  std::this_thread::sleep_for(kPendingAgentGrace + std::chrono::milliseconds(50));  // the intruders are old now

  RankCommand command;
  command.program = SHARDSCOPE_CLI_PATH;
  command.argv = {SHARDSCOPE_CLI_PATH, "node", "--connect", rendezvous.address(), "--node_rank", "0"};
  command.env = {"PATH=/usr/bin:/bin"};
  RankProcess agent = RankProcess::spawn(command);
  std::string out;
  std::optional<ArrivedAgent> arrived;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!arrived && Clock::now() < deadline) {
    char buffer[4096];
    const ssize_t n = ::read(agent.stdout_fd(), buffer, sizeof buffer);
    if (n > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
      if (const auto token = parse_agent_token_line(out)) rendezvous.add_token(token->first, token->second);
    }
    rendezvous.accept_all();
    for (int fd : rendezvous.pending_fds())
      if (!arrived) arrived = rendezvous.read_pending(fd, refused);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(arrived) << "agent output: " << out;
  EXPECT_EQ(arrived->identity, "node=0");
  EXPECT_GE(rendezvous.dropped(), 1u);
  AgentLink link;
  link.attach(arrived->fd, arrived->fd, true, std::move(arrived->codec));
  link.send(message_of("stop"));
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (!agent.try_reap() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int fd : intruders) ::close(fd);
}

}  // namespace
}  // namespace shardscope::launcher
