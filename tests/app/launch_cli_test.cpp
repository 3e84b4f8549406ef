// `shardscope launch` as a user runs it, with real `shardscope train` ranks on CPU: a run into a
// session, Ctrl-C, the errors that start nothing, and (once training runs on several ranks) two
// ranks into one session and the kill test: SIGKILL one rank, the launcher stops the other,
// names the killed rank first, exits 137 and leaves no process.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "launcher/device_selection.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

extern char** environ;

namespace shardscope::testing {
namespace {

using test::free_port;
using test::process_gone;


bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr const char* kSingleRankOnly = "this build trains one rank per run";

class LaunchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(temp_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2, "steps_per_print": 1,
        "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})";
  }
  // Launcher flags, then `--` and a tiny GPT-2's train arguments.
  std::vector<std::string> launch(std::vector<std::string> flags, int steps) const {
    std::vector<std::string> args{"launch", "--master_port", std::to_string(free_port())};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "--config", temp_.file("ds.json"), "--model", "gpt2", "--layers", "2", "--hidden",
                             "32", "--heads", "2", "--vocab", "64", "--seq-len", "16", "--steps",
                             std::to_string(steps)});
    return args;
  }
  std::string db() const { return temp_.file("runs.db"); }
  sessions::SessionDetail only_session(sessions::Store& store) const {
    const auto all = sessions::list_sessions(store);
    EXPECT_EQ(all.size(), 1u);
    return sessions::load_session(store, all.at(0).id);
  }

  test::TempDir temp_;
};

TEST_F(LaunchCli, OneCpuRankTrainsIntoACompletedSession) {
  const auto r = run_cli(launch({"--num_procs", "1", "--session", db(), "--name", "one-rank"}, 3));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\n[Rank 0] step=3, skipped=0") || r.out.rfind("[Rank 0] step=3", 0) == 0) << r.out;
  EXPECT_FALSE(contains(r.out, "[rank 0] ")) << "one rank is not prefixed";
  EXPECT_TRUE(contains(r.out, "one-rank  [completed]")) << r.out;  // the session summary
  // ... after a line of the launcher's own, so the summary does not read as the one rank's output.
  const auto header = r.out.find("\nshardscope launch: the run ended with exit code 0; the session it recorded:\nsession 1  one-rank");
  EXPECT_NE(header, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("trained 3 step(s)"), header) << r.out;
  EXPECT_TRUE(contains(r.err, "shardscope launch: setting OMP_NUM_THREADS=")) << r.err;
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  EXPECT_EQ(detail.info.status, "completed");
  EXPECT_EQ(detail.info.world_size, 1);
  ASSERT_EQ(detail.ranks.size(), 1u);
  EXPECT_EQ(detail.ranks[0].info.device, "cpu");
  EXPECT_GT(detail.ranks[0].info.pid, 0);
  EXPECT_EQ(detail.ranks[0].exit_code, 0);
  EXPECT_TRUE(contains(detail.config_json, "\"train_micro_batch_size_per_gpu\":2")) << detail.config_json;
  ASSERT_GE(detail.command_line.size(), 2u);
  EXPECT_EQ(detail.command_line[1], "launch");
  ASSERT_TRUE(detail.environment);
  EXPECT_FALSE(detail.environment->versions.libtorch.empty());
  EXPECT_EQ(sessions::load_steps(store, detail.info.id, 0).size(), 3u);
  bool summary_logged = false;
  for (const auto& line : sessions::load_logs(store, detail.info.id, 0))
    summary_logged |= contains(line.text, "trained 3 step(s) to global step 3");
  EXPECT_TRUE(summary_logged) << "the rank's stdout reaches the session through the launcher";
}

TEST_F(LaunchCli, PreflightOfAHostfileOfThisMachineAloneSaysSo) {
  std::ofstream(temp_.file("local_hosts")) << "localhost slots=1\n";
  auto r = run_cli({"launch", "--preflight", "--hostfile", temp_.file("local_hosts")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, temp_.file("local_hosts") + " selects only this machine")) << r.err;
  EXPECT_TRUE(contains(r.err, "shardscope report")) << r.err;
  r = run_cli({"launch", "--preflight", "--hostfile", temp_.file("no_such_hostfile")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, temp_.file("no_such_hostfile") + " does not exist")) << r.err;
}

TEST_F(LaunchCli, RankZeroLinesAreRecordedOnce) {
  const auto r = run_cli(launch({"--num_procs", "1", "--session", db()}, 2));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  int copies = 0;
  for (const auto& line : sessions::load_logs(store, detail.info.id, 0))
    copies += contains(line.text, "[Rank 0] step=2, skipped=0") ? 1 : 0;
  EXPECT_EQ(copies, 1);
}

TEST_F(LaunchCli, CtrlCStopsTheRanksAndExits130) {
  RunningCli cli(launch({"--num_procs", "1", "--session", db()}, 1000000), temp_);
  ASSERT_GT(cli.pid(), 0);
  ASSERT_TRUE(cli.wait_until([](const std::string& out, const std::string&) { return contains(out, "step=2,"); }, 60))
      << cli.err();
  const pid_t rank0 = rank_pid(cli.err(), 0);
  ASSERT_GT(rank0, 0) << cli.err();
  ::kill(cli.pid(), SIGINT);
  EXPECT_EQ(cli.wait(), 130) << cli.err();
  EXPECT_TRUE(contains(cli.err(), "received SIGINT: forwarding it to every rank")) << cli.err();
  EXPECT_TRUE(process_gone(rank0));
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  EXPECT_EQ(detail.info.status, "interrupted");
  ASSERT_EQ(detail.ranks.size(), 1u);
  EXPECT_EQ(detail.ranks[0].exit_code, -SIGINT);
  EXPECT_GE(sessions::load_steps(store, detail.info.id, 0).size(), 2u);
}

TEST_F(LaunchCli, ErrorsBeforeStartingExit2WithTheRemedy) {
  auto r = run_cli(launch({"--include", "worker-1:0"}, 1));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "host 'worker-1' is not this machine")) << r.err;
  EXPECT_TRUE(contains(r.err, "--hostfile FILE")) << r.err;
  r = run_cli(launch({"--num_procs", "2", "--exclude", "localhost:1"}, 1));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--num_procs starts CPU ranks")) << r.err;
  if (launcher::count_local_gpus() == 0) {
    r = run_cli(launch({"--num_gpus", "2"}, 1), {"CUDA_VISIBLE_DEVICES="});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(contains(r.err, "--num_gpus 2: no GPU is visible")) << r.err;
    EXPECT_TRUE(contains(r.err, "use --num_procs 2")) << r.err;
  }
  auto args = launch({"--num_procs", "1"}, 1);
  args.insert(args.end(), {"--session", db()});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "put it before `--`")) << r.err;
  r = run_cli({"launch", "--num_procs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "launch needs the train arguments after `--`")) << r.err;
}

TEST_F(LaunchCli, ABusyMasterPortIsNamedWithTheRemedy) {
  test::LoopbackSocket busy(/*listen=*/true);
  ASSERT_GT(busy.port(), 0);
  const std::string port = std::to_string(busy.port());
  auto args = launch({"--num_procs", "1", "--session", db()}, 1);
  args[2] = port;  // launch() puts --master_port first
  const auto r = run_cli(args);
  busy.close();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "MASTER_PORT " + port + " on 127.0.0.1 is already in use")) << r.err;
  EXPECT_TRUE(contains(r.err, "Pick another port with --master_port")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0 pid")) << "a rank was started";
}

TEST_F(LaunchCli, ConfigErrorsStopTheLaunchBeforeAnyRank) {
  std::ofstream(temp_.file("ds.json")) << R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
      "gradient_accumulation_steps": 4})";
  const auto r = run_cli(launch({"--num_procs", "2"}, 1));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "ds.json:1:")) << r.err;
  EXPECT_TRUE(contains(r.err, "30 != 4 * 4 * 2")) << r.err;  // checked at the launch's world size
  EXPECT_FALSE(contains(r.err, "rank 0 pid")) << r.err;
}

// --deepspeed-version chooses the rules of the launcher's check and of every rank's: an "amp" block
// is a warning under 0.19.7 (the rank trains) and DeepSpeed 0.19.8's parse error (no rank starts).
TEST_F(LaunchCli, DeepSpeedVersionRulesTheConfigCheckOfTheLauncherAndTheRanks) {
  std::ofstream(temp_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "amp": {"enabled": false}})";
  auto r = run_cli(launch({"--num_procs", "1", "--deepspeed-version", "0.19.8"}, 1));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "shardscope launch: rules: DeepSpeed 0.19.8 rules (--deepspeed-version)\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "DeepSpeed 0.19.8 would refuse it too")) << r.err;
  EXPECT_TRUE(contains(r.err, "NVIDIA Apex AMP integration has been removed")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0 pid")) << r.err;

  r = run_cli(launch({"--num_procs", "1", "--deepspeed-version", "0.19.7"}, 1));
  EXPECT_EQ(r.exit_code, 0) << r.err;  // the rank was given 0.19.7 too, where amp is only deprecated
  EXPECT_TRUE(contains(r.err, "shardscope launch: rules: DeepSpeed 0.19.7 rules (--deepspeed-version)\n")) << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "deprecated")) << r.out << r.err;

  r = run_cli(launch({"--num_procs", "1", "--deepspeed-version", "0.19"}, 1));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "0.19.7, 0.19.8")) << r.err;
  auto args = launch({"--num_procs", "1", "--deepspeed-version", "0.19.7"}, 1);
  args.insert(args.end(), {"--deepspeed-version", "0.19.8"});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "disagrees")) << r.err;
}

TEST_F(LaunchCli, TwoCpuRanksTrainIntoOneSession) {
  const auto r = run_cli(launch({"--num_procs", "2", "--session", db()}, 3));
  if (r.exit_code != 0 && contains(r.err, kSingleRankOnly))
    GTEST_SKIP() << "`shardscope train` does not train several ranks in this build yet: " << kSingleRankOnly;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[rank 0] [Rank 0] step=3")) << r.out;
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  EXPECT_EQ(detail.info.status, "completed");
  EXPECT_EQ(detail.info.world_size, 2);
  ASSERT_EQ(detail.ranks.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(detail.ranks[static_cast<std::size_t>(rank)].exit_code, 0);
    EXPECT_EQ(sessions::load_steps(store, detail.info.id, rank).size(), 3u) << "rank " << rank;
  }
}

TEST_F(LaunchCli, KillingOneRankStopsTheOtherAndReportsItFirst) {
  RunningCli cli(launch({"--num_procs", "2", "--session", db()}, 1000000), temp_);
  ASSERT_GT(cli.pid(), 0);
  const bool training = cli.wait_until(
      [](const std::string& out, const std::string& err) {
        return contains(out, "[rank 0] [Rank 0] step=2,") || contains(err, kSingleRankOnly);
      },
      120);
  if (contains(cli.err(), kSingleRankOnly)) {
    cli.wait();
    GTEST_SKIP() << "`shardscope train` does not train several ranks in this build yet: " << kSingleRankOnly;
  }
  ASSERT_TRUE(training) << cli.err();
  const pid_t rank0 = rank_pid(cli.err(), 0), rank1 = rank_pid(cli.err(), 1);
  ASSERT_GT(rank0, 0);
  ASSERT_GT(rank1, 0);
  ::kill(rank1, SIGKILL);
  EXPECT_EQ(cli.wait(), 137) << cli.err();
  EXPECT_TRUE(contains(cli.err(), "rank 1 was killed by signal 9 (SIGKILL) (the first rank to fail)")) << cli.err();
  EXPECT_TRUE(process_gone(rank0)) << "rank 0 was left running";
  EXPECT_TRUE(process_gone(rank1));
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  EXPECT_EQ(detail.info.status, "failed");
  ASSERT_EQ(detail.ranks.size(), 2u);
  EXPECT_EQ(detail.ranks[1].exit_code, -SIGKILL);
  EXPECT_NE(detail.ranks[0].exit_code, 0);
}

}  // namespace
}  // namespace shardscope::testing
