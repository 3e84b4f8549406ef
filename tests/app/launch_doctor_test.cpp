// The run doctor live in `shardscope launch` (issue 28): 4 CPU (Gloo) ranks of a tiny GPT-2, one
// made to hang before a collective by SHARDSCOPE_FAULT. The launcher must name that rank, the
// collective's op and sequence number (the ones the faulted rank printed), store the finding,
// and under --on-hang stop end every rank and exit 124. Each trial is a few seconds: --hang-after
// is short and the fault comes at step 3.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "sessions/doctor_records.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::testing {
namespace {

constexpr int kRanks = 4;
constexpr double kTrialBoundS = 120;  // startup of 4 LibTorch ranks on 2 loaded cores, then the hang

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

struct HangCase {
  const char* name;
  int stage;
  int rank;
  const char* op;
};

// What the faulted rank said on stderr: "rank 2 at step 3, before collective #41 (all_reduce)".
std::optional<long long> faulted_sequence(const std::string& err, int rank, const std::string& op) {
  const std::regex said("rank " + std::to_string(rank) + " at step [0-9]+, before collective #([0-9]+) \\(" + op + "\\)");
  std::smatch m;
  if (!std::regex_search(err, m, said)) return std::nullopt;
  return std::stoll(m[1]);
}

class LaunchDoctor : public ::testing::Test {
 protected:
  void write_config(int stage, bool timers = false) const {
    std::ofstream(temp_.file("ds.json")) << R"({"train_micro_batch_size_per_gpu": 1, "steps_per_print": 1, "wall_clock_breakdown": )"
                                         << (timers ? "true" : "false") << R"(,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "zero_optimization": {"stage": )"
                                         << stage << "}}";
  }
  std::vector<std::string> launch(std::vector<std::string> flags) const {
    std::vector<std::string> args{"launch", "--num_procs", std::to_string(kRanks), "--master_port",
                                  std::to_string(test::free_port()), "--session", db()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "--config", temp_.file("ds.json"), "--model", "gpt2", "--layers", "2", "--hidden",
                             "32", "--heads", "2", "--vocab", "64", "--seq-len", "16", "--steps", "1000"});
    return args;
  }
  std::string db() const { return temp_.file("runs.db"); }
  sessions::SessionDetail only_session(sessions::Store& store) const {
    const auto all = sessions::list_sessions(store);
    EXPECT_EQ(all.size(), 1u);
    return sessions::load_session(store, all.at(0).id);
  }
  // The hang finding the session stored, checked against what the faulted rank said.
  void expect_stored_hang(const HangCase& c, long long sequence, const std::string& status) const {
    auto store = sessions::Store::open(db());
    const auto detail = only_session(store);
    EXPECT_EQ(detail.info.status, status);
    const auto findings = sessions::load_findings(store, detail.info.id);
    const auto hang = std::find_if(findings.begin(), findings.end(), [](const auto& f) { return f.kind == "hang"; });
    ASSERT_NE(hang, findings.end()) << "no hang finding stored";
    EXPECT_EQ(hang->ranks, std::vector<int>{c.rank});
    EXPECT_TRUE(contains(hang->summary, std::string(c.op) + " #" + std::to_string(sequence))) << hang->summary;
    EXPECT_TRUE(contains(hang->summary, "never entered by " + this_host() + ":" + std::to_string(c.rank)))
        << hang->summary;
  }
  void expect_no_rank_left(const std::string& err) const {
    for (int rank = 0; rank < kRanks; ++rank) {
      const pid_t pid = rank_pid(err, rank);
      ASSERT_GT(pid, 0) << "rank " << rank << "'s pid not printed:\n" << err;
      EXPECT_TRUE(test::process_gone(pid)) << "rank " << rank << " (pid " << pid << ") was left running";
    }
  }

  test::TempDir temp_;
};

class LaunchDoctorStop : public LaunchDoctor, public ::testing::WithParamInterface<HangCase> {};

// --on-hang stop: the culprit named in the launcher's output and the session, the run ended, 124.
TEST_P(LaunchDoctorStop, AHangIsNamedAndStopped) {
  const HangCase c = GetParam();
  write_config(c.stage);
  const std::string fault = std::to_string(c.rank) + ":3:hang-before-collective:" + c.op;
  const auto r = run_cli(launch({"--hang-after", "4", "--on-hang", "stop"}), {"SHARDSCOPE_FAULT=" + fault});
  ASSERT_EQ(r.exit_code, 124) << r.err;
  const auto sequence = faulted_sequence(r.err, c.rank, c.op);
  ASSERT_TRUE(sequence.has_value()) << "the faulted rank did not say where it hangs:\n" << r.err;
  EXPECT_TRUE(contains(r.err, "shardscope launch: doctor: ERROR hang: hang in " + std::string(c.op) + " #" +
                                  std::to_string(*sequence)))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--on-hang stop: stopping every rank")) << r.err;
  EXPECT_TRUE(contains(r.err, "Exit code 124.")) << r.err;
  expect_stored_hang(c, *sequence, "hung");
  expect_no_rank_left(r.err);
}

INSTANTIATE_TEST_SUITE_P(Collectives, LaunchDoctorStop,
                         ::testing::Values(HangCase{"stage0_all_reduce_backward", 0, 2, "all_reduce"},
                                           HangCase{"stage3_all_gather_forward", 3, 1, "all_gather"}),
                         [](const auto& info) { return std::string(info.param.name); });

// --on-hang report (the default): the culprit is named and stored, the run goes on waiting; Ctrl-C
// then ends it as an interrupted run.
TEST_F(LaunchDoctor, AHangIsReportedAndTheRunKeptUnderReport) {
  const HangCase c{"stage2_reduce_scatter", 2, 3, "reduce_scatter"};
  write_config(c.stage);
  ::setenv("SHARDSCOPE_FAULT", "3:3:hang-before-collective:reduce_scatter", 1);
  RunningCli cli(launch({"--hang-after", "4"}), temp_);
  ::unsetenv("SHARDSCOPE_FAULT");
  const bool named = cli.wait_until(
      [](const std::string&, const std::string& err) { return contains(err, "doctor: ERROR hang:"); }, kTrialBoundS);
  ASSERT_TRUE(named) << cli.err();
  EXPECT_FALSE(cli.wait_for(2).has_value()) << "--on-hang report must not end the run:\n" << cli.err();
  ::kill(cli.pid(), SIGINT);
  EXPECT_EQ(cli.wait(), 130) << cli.err();
  const auto sequence = faulted_sequence(cli.err(), c.rank, c.op);
  ASSERT_TRUE(sequence.has_value()) << cli.err();
  expect_stored_hang(c, *sequence, "interrupted");
  expect_no_rank_left(cli.err());
}

// A rank sleeping 40 ms in every forward from step 5 (several times the tiny model's forward) is
// flagged live as a straggler in forward, with its host, within 20 steps; the run completes. The
// phase timers come with wall_clock_breakdown, as DeepSpeed's do.
TEST_F(LaunchDoctor, ASlowRankIsFlaggedLiveWithItsPhaseAndHost) {
  write_config(0, true);
  auto args = launch({});
  args.back() = "40";  // --steps
  const auto r = run_cli(args, {"SHARDSCOPE_FAULT=1:5:sleep-in-phase:forward:40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "doctor: WARNING straggler: " + this_host() + ":1 is slow in forward")) << r.err;
  auto store = sessions::Store::open(db());
  const auto detail = only_session(store);
  const auto findings = sessions::load_findings(store, detail.info.id);
  std::vector<sessions::Finding> flags;
  for (const auto& f : findings)
    if (f.kind == "straggler") flags.push_back(f);
  ASSERT_EQ(flags.size(), 1u) << "one flag, for the slow rank only";
  EXPECT_EQ(flags[0].ranks, std::vector<int>{1});
  EXPECT_LE(flags[0].last_step, 5 + 20) << flags[0].summary;
  EXPECT_TRUE(contains(flags[0].summary, "ms against its peers'")) << flags[0].summary;
}

TEST_F(LaunchDoctor, TheDoctorsFlagsAreCheckedBeforeAnyRankStarts) {
  write_config(0);
  auto args = launch({"--hang-after", "0"});
  auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--hang-after must be a number of seconds above 0, got '0'")) << r.err;
  r = run_cli(launch({"--on-hang", "kill"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--on-hang must be `report`")) << r.err;
  r = run_cli({"launch", "--num_procs", "2", "--hang-after", "30", "--", "--steps", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--hang-after needs --session FILE")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0 pid")) << r.err;
}

}  // namespace
}  // namespace shardscope::testing
