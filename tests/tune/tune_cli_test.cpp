// `shardscope tune` as a user runs it, with real 2-rank CPU trials (Gloo) of a tiny GPT-2: the
// estimator prunes against --memory-budget, the three tuners run, early stopping stops, an OOM
// trial is recorded and the search goes on, kill -9 then --resume repeats no finished trial, and
// the best config validates and trains.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/tune_records.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::testing {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(temp_.file("ds.json")) << R"({"train_batch_size": 8, "steps_per_print": 100,
        "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})";
  }
  // tune flags over a small fixed space, then `--` and a tiny GPT-2's train arguments.
  std::vector<std::string> tune(std::vector<std::string> flags, const std::string& window = "2:3") const {
    std::vector<std::string> args{"tune", "--config", temp_.file("ds.json"), "--num_procs", "2", "--db", db(),
                                  "--out", temp_.file("out"), "--profile-steps", window};
    for (const std::string row : {"activation_checkpointing=false", "zero_optimization.offload_optimizer.device=none",
                                  "zero_optimization.offload_param.device=none"}) {
      const std::string key = row.substr(0, row.find('=') + 1);
      const bool given = std::any_of(flags.begin(), flags.end(), [&](const std::string& f) { return f.rfind(key, 0) == 0; });
      if (!given) args.insert(args.end(), {"--space", row});
    }
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab",
                             "64", "--seq-len", "16", "--device", "cpu"});
    return args;
  }
  std::string db() const { return temp_.file("tune.db"); }
  std::vector<sessions::TuneTrialRecord> trials() const {
    auto store = sessions::Store::open(db());
    const auto runs = sessions::load_tune_runs(store);
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? std::vector<sessions::TuneTrialRecord>{} : sessions::load_tune_trials(store, runs[0].uid);
  }
  std::map<std::string, int> statuses() const {
    std::map<std::string, int> n;
    for (const auto& t : trials()) ++n[t.status];
    return n;
  }

  test::TempDir temp_;
};

TEST_F(TuneCli, PrunesOverTheBudgetAndTheBestConfigValidatesAndTrains) {
  // The estimator puts ZeRO 0 of this model at tens of MiB per rank and ZeRO 2 near 2 GiB (its
  // reduce bucket of 5e8 elements): 200 MiB keeps the first and prunes the second.
  const auto r = run_cli(tune({"--memory-budget", "200MiB", "--space", "zero_optimization.stage=0,2",
                               "--space", "train_micro_batch_size_per_gpu=1,4"}));
  const auto rows = trials();
  ASSERT_EQ(rows.size(), 4u) << r.err;
  int pruned = 0, ok = 0;
  for (const auto& t : rows) {
    ASSERT_TRUE(t.predicted_bytes) << t.name;
    if (t.status == "pruned") {
      ++pruned;
      EXPECT_GT(*t.predicted_bytes, 200.0 * 1048576 * 0.9) << t.name;
      EXPECT_TRUE(t.session_uid.empty()) << "a pruned candidate is never launched";
    } else {
      EXPECT_LE(*t.predicted_bytes, 200.0 * 1048576 * 0.9) << t.name;
      EXPECT_EQ(t.status, "ok") << t.message;
      ++ok;
    }
  }
  ASSERT_GT(pruned, 0) << r.out << r.err;
  ASSERT_GT(ok, 0) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "pruned")) << r.out;
  EXPECT_TRUE(temp_.exists("out/tune_report.md"));
  // Only the tuned keys differ from the user's file.
  json best = json::parse(std::ifstream(temp_.file("out/ds_config.json")));
  json user = json::parse(std::ifstream(temp_.file("ds.json")));
  for (const char* key : {"train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization"})
    best.erase(key);
  EXPECT_EQ(best, user);
  const auto validate = run_cli({"validate", temp_.file("out/ds_config.json"), "--world-size", "2"});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;
  const auto train = run_cli({"launch", "--num_procs", "2", "--", "--config", temp_.file("out/ds_config.json"),
                              "--model", "gpt2", "--layers", "2", "--hidden", "32", "--heads", "2", "--vocab", "64",
                              "--seq-len", "16", "--steps", "2", "--device", "cpu"});
  EXPECT_EQ(train.exit_code, 0) << train.err;
  // Trials are ordinary sessions, tagged with the run.
  auto store = sessions::Store::open(db());
  sessions::SessionFilter f;
  f.tag = "tune:" + sessions::load_tune_runs(store).at(0).uid;
  EXPECT_EQ(sessions::list_sessions(store, f).size(), static_cast<std::size_t>(ok));
}

TEST_F(TuneCli, RandomAndModelBasedTryEveryCandidateOnce) {
  for (const char* tuner : {"random", "model_based"}) {
    std::remove(db().c_str());
    const auto r = run_cli(tune({"--memory-budget", "4GiB", "--tuner", tuner, "--early-stopping", "0", "--space",
                                 "zero_optimization.stage=1,2", "--space", "train_micro_batch_size_per_gpu=2"}));
    ASSERT_EQ(r.exit_code, 0) << tuner << r.err;
    EXPECT_EQ(statuses()["ok"], 2) << tuner << r.out;
    EXPECT_TRUE(contains(r.out, "stopped: every candidate was tried")) << r.out;
  }
}

TEST_F(TuneCli, SkipsWhatIsSlowerByConstructionUnlessItsSiblingFails) {
  // Checkpointing on at the same micro-batch only recomputes: recorded as skipped, naming the
  // sibling that ran.
  const std::vector<std::string> space{"--memory-budget", "4GiB", "--space", "zero_optimization.stage=1",
                                       "--space", "train_micro_batch_size_per_gpu=2",
                                       "--space", "activation_checkpointing=false,true"};
  auto r = run_cli(tune(space));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = trials();
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[0].status, "ok") << rows[0].message;
  EXPECT_EQ(rows[1].status, "skipped");
  EXPECT_TRUE(contains(rows[1].message, "than trial 1 [")) << rows[1].message;
  EXPECT_TRUE(contains(rows[1].message, "without activation checkpointing")) << rows[1].message;
  EXPECT_TRUE(rows[1].session_uid.empty()) << "a skipped candidate is never launched";
  EXPECT_TRUE(contains(r.out, "every candidate not slower by construction was tried")) << r.out;
  // --try-dominated runs it.
  std::remove(db().c_str());
  auto flags = space;
  flags.push_back("--try-dominated");
  r = run_cli(tune(flags));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(statuses()["ok"], 2) << r.out;
  // When the sibling goes out of memory, the checkpointed config gets its trial (here it too).
  std::remove(db().c_str());
  r = run_cli(tune(space), {"SHARDSCOPE_FAULT=0:1:oom:64"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(statuses()["oom"], 2) << r.out;
}

TEST_F(TuneCli, EarlyStoppingEndsTheSearchAfterNTrialsWithoutImprovement) {
  // A trial must be 11 times as fast to count as better, so none beats the first: two more, then stop.
  const auto r = run_cli(tune({"--memory-budget", "4GiB", "--early-stopping", "2", "--min-improvement", "10",
                               "--space", "zero_optimization.stage=0,1,2,3", "--space", "train_micro_batch_size_per_gpu=2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(statuses()["ok"], 3) << r.out;
  EXPECT_TRUE(contains(r.out, "stopped: early stopping: 2 trial(s)")) << r.out;
}

TEST_F(TuneCli, AnOutOfMemoryTrialIsRecordedAndTheSearchGoesOn) {
  // The engine's fault: rank 0 allocates until the CPU allocator fails (under an address-space
  // limit), in every trial; the tuner records each and ends with no best, exit code 1.
  const auto r = run_cli(tune({"--memory-budget", "4GiB", "--space", "zero_optimization.stage=1,2", "--space",
                               "train_micro_batch_size_per_gpu=2"}),
                         {"SHARDSCOPE_FAULT=0:1:oom:64"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(statuses()["oom"], 2) << r.err;
  EXPECT_TRUE(contains(r.out, "no trial ran to the end")) << r.out;
}

TEST_F(TuneCli, ResumeAfterKillNineRepeatsNoFinishedTrial) {
  const auto flags = tune({"--memory-budget", "4GiB", "--early-stopping", "0", "--space",
                           "zero_optimization.stage=0,1,2", "--space", "train_micro_batch_size_per_gpu=2"});
  std::map<std::string, std::string> before;  // candidate -> session of a finished trial
  {
    RunningCli cli(flags, temp_);
    ASSERT_TRUE(cli.wait_until([](const std::string&, const std::string& err) { return contains(err, "trial 2 ["); }, 50))
        << cli.err();
    ::kill(cli.pid(), SIGKILL);
    EXPECT_EQ(cli.wait(), 128 + SIGKILL);
  }
  for (const auto& t : trials())
    if (t.finished()) before[t.candidate_key] = t.session_uid;
  ASSERT_GE(before.size(), 1u);
  auto resumed = flags;
  resumed.insert(resumed.begin() + 1, "--resume");
  const auto r = run_cli(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, std::to_string(before.size()) + " finished trial(s) kept, none repeated")) << r.err;
  const auto after = trials();
  ASSERT_EQ(after.size(), 3u);
  for (const auto& t : after) {
    EXPECT_EQ(t.status, "ok") << t.name << ": " << t.message;
    if (before.count(t.candidate_key)) EXPECT_EQ(t.session_uid, before[t.candidate_key]) << "trial " << t.trial << " ran again";
  }
  // Each finished trial has exactly one completed session.
  auto store = sessions::Store::open(db());
  sessions::SessionFilter f;
  f.status = "completed";
  EXPECT_EQ(sessions::list_sessions(store, f).size(), 3u);
}

TEST_F(TuneCli, SigtermStopsTheTrialAndLeavesItForResume) {
  RunningCli cli(tune({"--memory-budget", "4GiB", "--space", "zero_optimization.stage=1,2", "--space",
                       "train_micro_batch_size_per_gpu=2"},
                      "2:4000"),
                 temp_);
  ASSERT_TRUE(cli.wait_until([](const std::string&, const std::string& err) { return contains(err, "trial 1 ["); }, 30))
      << cli.err();
  ::kill(cli.pid(), SIGTERM);
  const auto code = cli.wait_for(30);
  ASSERT_TRUE(code) << "the tuner did not stop: " << cli.err();
  EXPECT_EQ(*code, 130) << cli.err();
  EXPECT_TRUE(contains(cli.out(), "stopped: stopped by a signal; --resume continues")) << cli.out();
  const auto rows = trials();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, "running") << "an interrupted trial is not a finished one";
  auto store = sessions::Store::open(db());
  EXPECT_EQ(sessions::load_tune_runs(store).at(0).status, "stopped");
}

}  // namespace
}  // namespace shardscope::testing
