// `shardscope launch --hostfile` across real hosts: network namespaces with their own OpenSSH
// servers (host_namespaces.hpp), reached over real ssh and real TCP, the launcher on host 1.
// Issue 15's checks: 2 hosts x 2 ranks give the 1-host 4-rank losses at ZeRO stages 0-3; killing
// a rank on host 2 stops every rank and names host:rank; pulling host 2's link names host 2; a
// collector connection without the run's secret is refused and changes nothing; nothing given to
// the launcher shows in any process's command line; --no_ssh --node_rank, pdsh and mpirun start
// the same job; the preflight's table and its failing host.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sessions/collector_handshake.hpp"
#include "sessions/doctor_records.hpp"
#include "sessions/errors.hpp"
#include "sessions/event_codec.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/tcp_connect.hpp"
#include "sessions/tune_records.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/multihost/host_namespaces.hpp"

namespace shardscope::test {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

HostNamespaces* g_hosts = nullptr;

class MultiHost : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { g_hosts = new HostNamespaces(2); }
  static void TearDownTestSuite() {
    delete g_hosts;
    g_hosts = nullptr;
  }
  void SetUp() override {
    if (!g_hosts->skip_reason().empty()) GTEST_SKIP() << g_hosts->skip_reason();
    std::ofstream(dir_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2, "steps_per_print": 1,
        "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})";
  }
  const HostNamespaces& hosts() const { return *g_hosts; }
  std::string host(int k) const { return hosts().address(k); }

  std::vector<std::string> train_args(int steps, int stage) const {
    return {"--", "--config", dir_.file("ds.json"), "--set", "zero_optimization.stage=" + std::to_string(stage),
            "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "64", "--seq-len", "16",
            "--steps", std::to_string(steps)};
  }
  // `shardscope launch` over the hostfile's two hosts, two CPU ranks each, ssh with the test's keys.
  std::vector<std::string> hosts_launch(std::vector<std::string> flags, int steps, int stage = 2) const {
    std::vector<std::string> args = {SHARDSCOPE_CLI_PATH, "launch", "--hostfile", hosts().hostfile(), "--num_procs", "2",
                                     "--launcher_args", "-F " + hosts().ssh_config()};
    args.insert(args.end(), flags.begin(), flags.end());
    for (const auto& a : train_args(steps, stage)) args.push_back(a);
    return args;
  }
  // The same job as one host of four ranks (the reference).
  std::vector<double> one_host_losses(int steps, int stage, const std::string& db) const {
    std::vector<std::string> args = {SHARDSCOPE_CLI_PATH, "launch", "--num_procs", "4", "--master_port", "29700",
                                     "--session", db};
    for (const auto& a : train_args(steps, stage)) args.push_back(a);
    const auto r = hosts().run(1, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return losses_of(db);
  }
  static std::vector<double> losses_of(const std::string& db) {
    sessions::Store store = sessions::Store::open(db);
    const auto all = sessions::list_sessions(store);
    EXPECT_EQ(all.size(), 1u);
    std::vector<double> losses;
    if (all.empty()) return losses;
    for (const auto& step : sessions::load_steps(store, all[0].id, 0))
      if (step.loss) losses.push_back(*step.loss);
    return losses;
  }
  static void expect_same_losses(const std::vector<double>& multi, const std::vector<double>& one, const std::string& what) {
    ASSERT_EQ(multi.size(), one.size()) << what;
    ASSERT_FALSE(one.empty()) << what;
    for (std::size_t i = 0; i < one.size(); ++i)
      EXPECT_LT(std::abs(multi[i] - one[i]) / std::max(std::abs(one[i]), 1e-12), 1e-5)
          << what << ": step " << i + 1 << " loss " << multi[i] << " vs " << one[i];
  }
  // The pid the launcher printed for `rank` ("[host] rank 2 pid 1234 (cpu)").
  static pid_t rank_pid(const std::string& err, int rank) {
    std::smatch m;
    const std::regex pattern("rank " + std::to_string(rank) + " pid ([0-9]+)");
    return std::regex_search(err, m, pattern) ? static_cast<pid_t>(std::stoi(m[1].str())) : -1;
  }
  // Whether every shardscope process in the namespaces of the hosts has gone, within `seconds`.
  bool hosts_clear(double seconds) const {
    const std::string ns1 = hosts().net_namespace_id(1), ns2 = hosts().net_namespace_id(2);
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      bool any = false;
      for (const auto& p : shardscope_processes()) any |= p.net_ns == ns1 || p.net_ns == ns2;
      if (!any) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (const auto& p : shardscope_processes())
      if (p.net_ns == ns1 || p.net_ns == ns2) ADD_FAILURE() << "left behind: pid " << p.pid << " " << p.cmdline;
    return false;
  }
  BackgroundCommand background(const std::vector<std::string>& args, const std::string& stem,
                               const std::vector<std::string>& env = {}, int on_host = 1) const {
    return BackgroundCommand(hosts(), on_host, args, env, dir_.file(stem));
  }
  static bool both_hosts_started(const std::string& err, const std::string& h1, const std::string& h2) {
    return contains(err, "[" + h1 + "] rank 0 pid") && contains(err, "[" + h2 + "] rank 2 pid");
  }

  TempDir dir_;
};

TEST_F(MultiHost, TwoHostsOfTwoRanksMatchOneHostOfFourAtEveryZeroStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    const std::string one_db = dir_.file("one" + std::to_string(stage) + ".db");
    const std::string multi_db = dir_.file("multi" + std::to_string(stage) + ".db");
    const auto reference = one_host_losses(3, stage, one_db);
    const auto r = hosts().run(1, hosts_launch({"--master_port", "2960" + std::to_string(stage), "--session", multi_db}, 3, stage));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "[" + host(1) + ":0] ")) << "rank output is relayed as [host:rank]: " << r.out;
    expect_same_losses(losses_of(multi_db), reference, "stage " + std::to_string(stage));
  }
  // The session records both hosts, their ranks and clock offsets, and `sessions show` prints them.
  const std::string db = dir_.file("multi3.db");
  sessions::Store store = sessions::Store::open(db);
  const auto detail = sessions::load_session(store, sessions::list_sessions(store).at(0).id);
  EXPECT_EQ(detail.info.status, "completed");
  ASSERT_EQ(detail.hosts.size(), 2u);
  EXPECT_EQ(detail.hosts[0].host, host(1));
  EXPECT_EQ(detail.hosts[1].ranks, (std::vector<int>{2, 3}));
  ASSERT_TRUE(detail.hosts[1].clock_offset_s);
  EXPECT_LT(std::abs(*detail.hosts[1].clock_offset_s), 0.5);  // one machine's clock, seen through ssh
  ASSERT_EQ(detail.ranks.size(), 4u);
  EXPECT_EQ(detail.ranks[3].info.host, host(2));
  EXPECT_EQ(detail.ranks[3].exit_code, 0);
  const auto show = hosts().run(1, {SHARDSCOPE_CLI_PATH, "sessions", "show", detail.info.uid, "--db", db});
  EXPECT_TRUE(contains(show.out, host(2)) && contains(show.out, "clock offset")) << show.out;
  EXPECT_TRUE(contains(show.out, "2,3")) << show.out;
}

TEST_F(MultiHost, KillingARankOnTheSecondHostStopsEveryRankAndNamesHostRank) {
  auto launch = background(hosts_launch({"--master_port", "29611"}, 100000), "kill");
  ASSERT_TRUE(launch.wait_until([&](const std::string& out, const std::string& err) {
    return both_hosts_started(err, host(1), host(2)) && contains(out, "step=2,");
  }, 120)) << launch.err();
  const pid_t victim = rank_pid(launch.err(), 2);
  ASSERT_GT(victim, 0) << launch.err();
  ::kill(victim, SIGKILL);
  const auto code = launch.wait(60);
  ASSERT_TRUE(code) << launch.err();
  EXPECT_EQ(*code, 137) << launch.err();
  EXPECT_TRUE(contains(launch.err(), host(2) + ":2 (pid " + std::to_string(victim) + ") was killed by signal 9 (SIGKILL)"))
      << launch.err();
  EXPECT_TRUE(contains(launch.err(), "(the first failure)")) << launch.err();
  EXPECT_TRUE(hosts_clear(15)) << "no rank, agent or ssh may be left on either host";
}

// Issue 28 across hosts: rank 3 (host 2) hangs before the all-reduce of step 3. The launcher on
// host 1 watches every host's ranks through the session's collector, names host(2):3 as the rank
// that never entered, stores the finding, stops the ranks on both hosts and exits 124.
TEST_F(MultiHost, AHangOnTheSecondHostIsNamedAsHostRankAndStopped) {
  const std::string db = dir_.file("hang.db");
  auto launch = background(hosts_launch({"--master_port", "29613", "--session", db, "--hang-after", "4", "--on-hang", "stop"},
                                        100000, 0),
                           "hang", {"SHARDSCOPE_FAULT=3:3:hang-before-collective:all_reduce"});
  const auto code = launch.wait(180);
  ASSERT_TRUE(code) << launch.err();
  EXPECT_EQ(*code, 124) << launch.err();
  EXPECT_TRUE(contains(launch.err(), "doctor: ERROR hang: hang in all_reduce #")) << launch.err();
  EXPECT_TRUE(contains(launch.err(), "never entered by " + host(2) + ":3")) << launch.err();
  sessions::Store store = sessions::Store::open(db);
  const auto detail = sessions::load_session(store, sessions::list_sessions(store).at(0).id);
  EXPECT_EQ(detail.info.status, "hung");
  const auto findings = sessions::load_findings(store, detail.info.id);
  const auto hang = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.kind == "hang"; });
  ASSERT_NE(hang, findings.end());
  EXPECT_EQ(hang->ranks, std::vector<int>{3});
  EXPECT_TRUE(hosts_clear(15)) << "--on-hang stop leaves no rank, agent or ssh on either host";
}

// Issue 29 across hosts: `shardscope tune` on host 1 runs each trial as a launch over the
// hostfile's two hosts (2 CPU ranks each, ssh options through --launcher_args); every trial
// completes and its session records both hosts and their ranks (the configs slower by
// construction are recorded as skipped, not run).
TEST_F(MultiHost, ATuneRunOverTwoHostsRecordsEveryTrialWithItsHosts) {
  const std::string db = dir_.file("tune.db");
  std::vector<std::string> args = {SHARDSCOPE_CLI_PATH, "tune", "--config", dir_.file("ds.json"), "--hostfile",
                                   hosts().hostfile(), "--num_procs", "2", "--launcher_args", "-F " + hosts().ssh_config(),
                                   "--memory-budget", "4GiB", "--space", "zero_optimization.stage=0,2,3", "--space",
                                   "train_micro_batch_size_per_gpu=2", "--profile-steps", "2:5", "--db", db, "--out",
                                   dir_.file("tuned"), "--", "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads",
                                   "2", "--vocab", "64", "--seq-len", "16", "--device", "cpu"};
  const auto r = hosts().run(1, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  sessions::Store store = sessions::Store::open(db);
  const auto runs = sessions::load_tune_runs(store);
  ASSERT_EQ(runs.size(), 1u);
  const auto trials = sessions::load_tune_trials(store, runs[0].uid);
  ASSERT_GE(trials.size(), 3u);  // the 3 stages, times the default space's other keys
  int ran = 0;
  for (const auto& trial : trials) {
    // Checkpointing or offload on is slower by construction while the config without it fits.
    if (trial.status == "skipped") continue;
    ++ran;
    EXPECT_EQ(trial.status, "ok") << trial.name << " " << trial.params_json << ": " << trial.message << "\n" << r.err;
    ASSERT_FALSE(trial.session_uid.empty()) << trial.name;
    const auto detail = sessions::load_session(store, sessions::find_session(store, trial.session_uid));
    ASSERT_EQ(detail.hosts.size(), 2u) << trial.name;
    EXPECT_EQ(detail.hosts[0].host, host(1)) << trial.name;
    EXPECT_EQ(detail.hosts[1].host, host(2)) << trial.name;
    EXPECT_EQ(detail.hosts[1].ranks, (std::vector<int>{2, 3})) << trial.name;
  }
  EXPECT_EQ(ran, 3) << "one trial per stage, the plain config of each";
  EXPECT_TRUE(std::ifstream(dir_.file("tuned/ds_config.json")).good());
  EXPECT_TRUE(hosts_clear(15)) << "no trial's rank, agent or ssh may be left on either host";
}

TEST_F(MultiHost, TakingAHostsLinkDownNamesThatHost) {
  auto launch = background(hosts_launch({"--master_port", "29612"}, 100000), "link");
  ASSERT_TRUE(launch.wait_until([&](const std::string& out, const std::string& err) {
    return both_hosts_started(err, host(1), host(2)) && contains(out, "step=2,");
  }, 120)) << launch.err();
  const auto start = Clock::now();
  // Host 2's cable, pulled at the switch: no FIN, no RST, only silence.
  ASSERT_EQ(::system(("/usr/sbin/ip -n " + hosts().name() + "-sw link set " + hosts().switch_port(2) + " down").c_str()), 0);
  const auto code = launch.wait(60);
  ASSERT_TRUE(code) << launch.err();
  EXPECT_EQ(*code, 1) << launch.err();
  EXPECT_TRUE(contains(launch.err(), "host " + host(2) + " became unreachable")) << launch.err();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30)) << "a dead link must be noticed within seconds";
  // Host 2's agent hears nothing from the launcher and stops its own ranks.
  EXPECT_TRUE(hosts_clear(40));
  ::system(("/usr/sbin/ip -n " + hosts().name() + "-sw link set " + hosts().switch_port(2) + " up").c_str());
}

// From host 2's network, as a process there would: the collector refuses it and records nothing.
void attack_collector_from(const std::string& ns_path, const std::string& collector, std::string& outcome) {
  const int ns = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) {  // this thread only: namespaces are per thread
    outcome = "setns failed";
    return;
  }
  ::close(ns);
  const auto [address, port] = sessions::parse_host_port(collector);
  try {
    sessions::TcpSinkOptions o;
    o.host = address;
    o.port = port;
    o.secret = "an-attacker-who-read-the-session-file-00000000";
    sessions::TcpEventSink sink(o);
    outcome = "accepted a wrong secret";
    return;
  } catch (const sessions::CollectorUnreachableError& e) {
    outcome = e.what();
  }
  // A raw client that ignores the challenge and sends events anyway.
  const int fd = sessions::connect_tcp(address, port, 5000);
  std::string bytes;
  sessions::encode_hello(sessions::Hello{}, bytes);
  sessions::StepMetrics fake;
  fake.rank = 0;
  fake.step = 1;
  fake.loss = 1e9;
  sessions::encode_event(fake, bytes);
  sessions::encode_event(sessions::LogLine{0, 1, sessions::LogLevel::kError, "INJECTED"}, bytes);
  [[maybe_unused]] const auto sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char sink[256];
  while (::recv(fd, sink, sizeof sink, 0) > 0) {
  }
  ::close(fd);
}

TEST_F(MultiHost, ACollectorConnectionWithoutTheSecretIsRefusedAndTheSessionUnchanged) {
  const std::string db = dir_.file("victim.db");
  auto launch = background(hosts_launch({"--master_port", "29613", "--session", db}, 40), "victim");
  std::smatch m;
  std::string collector;
  ASSERT_TRUE(launch.wait_until([&](const std::string& out, const std::string& err) {
    static const std::regex pattern("collector at ([0-9.]+:[0-9]+)");
    if (std::regex_search(err, m, pattern)) collector = m[1].str();
    return !collector.empty() && contains(out, "step=3,");
  }, 120)) << launch.err();
  std::string outcome;
  std::thread attacker(attack_collector_from, "/run/netns/" + hosts().ns(2), collector, std::ref(outcome));
  attacker.join();
  EXPECT_TRUE(contains(outcome, "refused this connection")) << outcome;
  const auto code = launch.wait(120);
  ASSERT_TRUE(code);
  ASSERT_EQ(*code, 0) << launch.err();
  EXPECT_TRUE(contains(launch.err(), "did not prove it holds the key of the rank it claims")) << launch.err();
  sessions::Store store = sessions::Store::open(db);
  const auto id = sessions::list_sessions(store).at(0).id;
  EXPECT_EQ(sessions::load_session(store, id).info.status, "completed");
  EXPECT_EQ(sessions::load_steps(store, id, 0).size(), 40u);
  for (const auto& step : sessions::load_steps(store, id)) EXPECT_NE(step.loss, 1e9);
  for (const auto& line : sessions::load_logs(store, id)) EXPECT_NE(line.text, "INJECTED");
  struct stat st {};
  ASSERT_EQ(::stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the session file is private to its owner";
}

TEST_F(MultiHost, NoVariableGivenToTheLauncherIsVisibleInPsOnEitherHost) {
  const std::string nccl = "nccl-marker-" + std::to_string(::getpid());
  const std::string wandb = "wandb-marker-" + std::to_string(::getpid());
  std::ofstream(dir_.file(".deepspeed_env")) << "WANDB_API_KEY=" << wandb << "\n";
  const std::string db = dir_.file("ps.db");
  std::string command = "cd " + dir_.file("") + " && exec";
  for (const auto& a : hosts_launch({"--master_port", "29614", "--session", db}, 100000)) command += " '" + a + "'";
  auto launch = background({"/bin/sh", "-c", command}, "ps", {"NCCL_SHARDSCOPE_TEST=" + nccl});
  ASSERT_TRUE(launch.wait_until([&](const std::string& out, const std::string& err) {
    return both_hosts_started(err, host(1), host(2)) && contains(out, "step=2,");
  }, 120)) << launch.err();
  // The variables did reach the ranks of host 2; the run's secret did not, nor the rank's own key
  // (it came on descriptor 3, issue 31) ...
  const pid_t remote_rank = rank_pid(launch.err(), 3);
  ASSERT_GT(remote_rank, 0);
  std::ifstream environ_file("/proc/" + std::to_string(remote_rank) + "/environ");
  std::string environment((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(environment, "NCCL_SHARDSCOPE_TEST=" + nccl));
  EXPECT_TRUE(contains(environment, "WANDB_API_KEY=" + wandb));
  EXPECT_FALSE(contains(environment, "SHARDSCOPE_COLLECTOR_SECRET=")) << "a rank's environment holds the secret";
  EXPECT_TRUE(contains(environment, "SHARDSCOPE_COLLECTOR_KEY_FD=3"));
  // What is left to find of the run's secret: the job the agent of host 2 holds is sealed, so the
  // secret is looked for as the launcher's own environment and command line would show it.
  const std::string secret = "SHARDSCOPE_COLLECTOR_SECRET=";
  // ... and none of them is in any command line of any process on any host (launcher, ssh, sshd,
  // agents, ranks), unlike DeepSpeed's pdsh command line.
  std::size_t scanned = 0;
  for (const auto& p : all_processes()) {
    ++scanned;
    EXPECT_FALSE(contains(p.cmdline, nccl) || contains(p.cmdline, wandb) || contains(p.cmdline, secret))
        << "pid " << p.pid << ": " << p.cmdline;
  }
  EXPECT_GT(scanned, 10u);
  ::kill(launch.pid(), SIGINT);
  EXPECT_EQ(launch.wait(60), 130) << launch.err();
  // The session keeps the NCCL variable and the credential's name, never its value or the secret.
  sessions::Store store = sessions::Store::open(db);
  const auto detail = sessions::load_session(store, sessions::list_sessions(store).at(0).id);
  EXPECT_EQ(detail.info.status, "interrupted");
  bool nccl_kept = false, key_redacted = false;
  for (const auto& [name, value] : detail.environment_variables) {
    nccl_kept |= name == "NCCL_SHARDSCOPE_TEST" && value == nccl;
    key_redacted |= name == "WANDB_API_KEY" && value == "<redacted>";
  }
  EXPECT_TRUE(nccl_kept);
  EXPECT_TRUE(key_redacted);
  store = sessions::Store::open(db);
  std::ifstream file(db, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(contains(bytes, wandb));
  EXPECT_FALSE(contains(bytes, secret));
  EXPECT_TRUE(hosts_clear(15));
}

TEST_F(MultiHost, NoSshNodeRankOnTwoNamespacesStartsTheSameJob) {
  const auto reference = one_host_losses(3, 2, dir_.file("one.db"));
  const std::string secret = dir_.file("secret");
  std::ofstream(secret) << "0123456789abcdef0123456789abcdef0123456789abcdef\n";
  ::chmod(secret.c_str(), 0600);
  const std::string db = dir_.file("nossh.db");
  auto node_args = [&](int node) {
    std::vector<std::string> args = {SHARDSCOPE_CLI_PATH, "launch", "--hostfile", hosts().hostfile(), "--num_procs", "2",
                                     "--no_ssh", "--node_rank", std::to_string(node), "--master_port", "29615",
                                     "--collector_secret_file", secret};
    if (node == 0) args.insert(args.end(), {"--session", db});
    for (const auto& a : train_args(3, 2)) args.push_back(a);
    return args;
  };
  auto node0 = background(node_args(0), "node0", {}, 1);
  auto node1 = background(node_args(1), "node1", {}, 2);
  const auto code1 = node1.wait(120), code0 = node0.wait(120);
  ASSERT_TRUE(code0 && code1);
  EXPECT_EQ(*code0, 0) << node0.err();
  EXPECT_EQ(*code1, 0) << node1.err();
  expect_same_losses(losses_of(db), reference, "--no_ssh");
  sessions::Store store = sessions::Store::open(db);
  const auto detail = sessions::load_session(store, sessions::list_sessions(store).at(0).id);
  ASSERT_EQ(detail.ranks.size(), 4u);
  EXPECT_EQ(detail.ranks[2].info.host, host(2));
  EXPECT_EQ(detail.ranks[3].exit_code, 0);
  ASSERT_EQ(detail.hosts.size(), 2u);
  ASSERT_TRUE(detail.hosts[1].clock_offset_s) << "node 1 measures its clock against node 0's collector";
}

TEST_F(MultiHost, PdshStartsTheSameJob) {
  const auto reference = one_host_losses(3, 2, dir_.file("one.db"));
  const std::string db = dir_.file("pdsh.db");
  auto args = hosts_launch({"--launcher", "pdsh", "--master_port", "29616", "--session", db}, 3);
  args.erase(args.begin() + 6, args.begin() + 8);  // pdsh's ssh takes its options from PDSH_SSH_ARGS_APPEND
  const auto r = hosts().run(1, args, {"PDSH_SSH_ARGS_APPEND=-F " + hosts().ssh_config()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_same_losses(losses_of(db), reference, "pdsh");
}

TEST_F(MultiHost, OpenMpiStartsTheSameJob) {
  const auto reference = one_host_losses(3, 2, dir_.file("one.db"));
  const std::string db = dir_.file("mpi.db");
  auto args = hosts_launch({"--launcher", "openmpi", "--master_port", "29617", "--session", db}, 3);
  args.erase(args.begin() + 6, args.begin() + 8);  // mpirun's ssh takes its options from plm_rsh_args
  const auto r = hosts().run(1, args, {"OMPI_MCA_plm_rsh_args=-F " + hosts().ssh_config(), "OMPI_ALLOW_RUN_AS_ROOT=1",
                                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_same_losses(losses_of(db), reference, "openmpi");
}

TEST_F(MultiHost, PreflightPrintsEveryHostAndTheAllReduceAndNamesAFailingHost) {
  std::vector<std::string> args = {SHARDSCOPE_CLI_PATH, "launch", "--preflight", "--json", "--hostfile", hosts().hostfile(),
                                   "--num_procs", "2", "--master_port", "29618", "--launcher_args",
                                   "-F " + hosts().ssh_config()};
  auto r = hosts().run(1, args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report.at("ok").get<bool>());
  ASSERT_EQ(report.at("hosts").size(), 2u);
  for (const auto& h : report.at("hosts")) EXPECT_TRUE(h.at("reachable").get<bool>()) << h.dump();
  EXPECT_EQ(report.at("hosts")[1].at("facts").at("hostname"), hosts().ns(2));
  EXPECT_TRUE(report.at("allreduce").at("correct").get<bool>());
  EXPECT_EQ(report.at("allreduce").at("world_size"), 4);
  EXPECT_GT(report.at("allreduce").at("busbw_gbps").get<double>(), 0);
  // A third host that does not answer: the table names it, with the fix, and the exit code is 1.
  const std::string unreachable = host(1).substr(0, host(1).rfind('.')) + ".9";
  std::ofstream(dir_.file("three")) << host(1) << " slots=2\n" << host(2) << " slots=2\n" << unreachable << " slots=2\n";
  args = {SHARDSCOPE_CLI_PATH, "launch", "--preflight", "--hostfile", dir_.file("three"), "--num_procs", "2",
          "--launcher_args", "-F " + hosts().ssh_config()};
  r = hosts().run(1, args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, unreachable + ": not reachable")) << r.out;
  EXPECT_TRUE(contains(r.out, "preflight FAILED: " + unreachable)) << r.out;
}

}  // namespace
}  // namespace shardscope::test
