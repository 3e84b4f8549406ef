// `shardscope train` as a user runs it: a short run into a session, a resume that stops where an
// uninterrupted run would with the same loss, and the errors for bad configs and flags.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::testing {
namespace {

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.file("");
    dir_.pop_back();  // file("") ends in '/'
    std::ofstream(dir_ + "/ds.json") << R"({"train_micro_batch_size_per_gpu": 8, "steps_per_print": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01}}})";
  }

  std::vector<std::string> train_args(int steps) const {
    return {"train", "--config", dir_ + "/ds.json", "--model", "mlp", "--steps", std::to_string(steps),
            "--device", "cpu"};
  }
  static std::string last_loss(const std::string& out) {
    static const std::regex loss(R"(final loss ([0-9.e+-]+))");
    std::smatch m;
    return std::regex_search(out, m, loss) ? m[1].str() : "";
  }

  test::TempDir temp_;  // removed with everything in it when the test ends
  std::string dir_;
};

TEST_F(TrainCli, RunsIntoASessionAndPrintsItsSummary) {
  auto args = train_args(6);
  args.insert(args.end(), {"--session", dir_ + "/s.db", "--name", "cli-run"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[Rank 0] step=2, skipped=0, lr=[0.01]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trained 6 step(s) to global step 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cli-run  [completed]"), std::string::npos) << r.out;  // the session summary
  const auto list = run_cli({"sessions", "list", "--db", dir_ + "/s.db"});
  EXPECT_NE(list.out.find("cli-run"), std::string::npos) << list.out;
}

// The run logs the estimator's prediction at its start; `sessions show` sets it beside what the
// run measured (on the CPU: the engine's tensor bytes, so the peak is the model states).
TEST_F(TrainCli, SessionsShowSetsThePredictionBesideTheMeasuredMemory) {
  auto args = train_args(4);
  args.insert(args.end(), {"--session", dir_ + "/s.db", "--name", "mem-run"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[memory prediction] model_states_bytes="), std::string::npos) << r.out;
  const auto show = run_cli({"sessions", "show", "mem-run", "--db", dir_ + "/s.db"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("memory per GPU, rank 0: the estimator's prediction beside the measured"), std::string::npos)
      << show.out;
  static const std::regex states(R"(model states +([0-9.]+) GiB +([0-9.]+) GiB +[-+][0-9.]+ %)");
  EXPECT_TRUE(std::regex_search(show.out, states)) << show.out;
  const auto json = run_cli({"sessions", "show", "mem-run", "--db", dir_ + "/s.db", "--json"});
  EXPECT_NE(json.out.find("\"memory_prediction\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"measured_peak_bytes\""), std::string::npos) << json.out;
}

TEST_F(TrainCli, ResumeStopsWhereAnUninterruptedRunStopsWithTheSameLoss) {
  const auto whole = run_cli(train_args(6));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto first = train_args(3);
  first.insert(first.end(), {"--save", dir_ + "/ckpt"});
  ASSERT_EQ(run_cli(first).exit_code, 0);
  std::ifstream latest(dir_ + "/ckpt/latest");
  std::string tag;
  latest >> tag;
  EXPECT_EQ(tag, "global_step3");
  auto rest = train_args(6);
  rest.insert(rest.end(), {"--load", dir_ + "/ckpt"});
  const auto resumed = run_cli(rest);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("trained 3 step(s) to global step 6"), std::string::npos) << resumed.out;
  EXPECT_FALSE(last_loss(whole.out).empty());
  EXPECT_EQ(last_loss(resumed.out), last_loss(whole.out));
}

TEST_F(TrainCli, ConfigErrorsAreDeepSpeedsAndExit1) {
  std::ofstream(dir_ + "/bad.json") << R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
      "gradient_accumulation_steps": 4, "optimizer": {"type": "AdamW"}})";
  const auto r = run_cli({"train", "--config", dir_ + "/bad.json", "--model", "mlp", "--steps", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.json:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32 != 4 * 4 * 1"), std::string::npos) << r.err;
}

TEST_F(TrainCli, UsageErrorsExit2) {
  EXPECT_EQ(run_cli({"train", "--config", dir_ + "/ds.json", "--model", "mlp"}).exit_code, 2);  // no --steps
  const auto r = run_cli({"train", "--config", dir_ + "/ds.json", "--model", "gtp2", "--steps", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpt2"), std::string::npos) << r.err;  // did you mean
  EXPECT_EQ(run_cli({"train", "--config", dir_ + "/ds.json", "--steps", "0"}).exit_code, 2);
}

TEST_F(TrainCli, UnreachableCollectorFailsFast) {
  auto args = train_args(1);
  args.insert(args.end(), {"--collector", "127.0.0.1:9"});
  const auto r = run_cli(args, {"SHARDSCOPE_COLLECTOR_SECRET=0123456789abcdef0123456789abcdef"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("127.0.0.1:9"), std::string::npos) << r.err;
}

// README: exit code 2 for unreadable inputs, from every reader `train` uses (it exited 1).
TEST_F(TrainCli, UnreadableInputsExit2NamingTheFile) {
  const std::string config = dir_ + "/ds.json";
  const std::vector<std::string> gpt2{"--model", "gpt2", "--layers", "1", "--hidden", "32", "--heads", "2", "--vocab", "64",
                                      "--seq-len", "16"};
  struct Case {
    std::vector<std::string> args;
    std::string phrase;
  };
  std::vector<Case> cases = {
      {{"--config", dir_ + "/missing.json", "--model", "mlp"}, dir_ + "/missing.json: no such file"},
      {{"--config", dir_, "--model", "mlp"}, dir_ + ": is a directory, not a JSON config file"},
      {{"--config", "/dev/zero", "--model", "mlp"}, "/dev/zero: is a character device"},
      {{"--config", config, "--model", "gpt2", "--model-config", "/dev/zero"}, "/dev/zero: is a character device"},
  };
  for (auto extra : std::vector<std::vector<std::string>>{{"--data", dir_}, {"--weights", dir_ + "/absent.safetensors"}}) {
    Case c{{"--config", config}, extra[1] + (extra[0] == "--data" ? ": is a directory, not a token file" : ": no such file")};
    c.args.insert(c.args.end(), gpt2.begin(), gpt2.end());
    c.args.insert(c.args.end(), extra.begin(), extra.end());
    cases.push_back(c);
  }
  for (const auto& c : cases) {
    std::vector<std::string> args{"train", "--steps", "1", "--device", "cpu"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << c.phrase << ": " << r.err;
    EXPECT_NE(r.err.find(c.phrase), std::string::npos) << r.err;
  }
}

// Issue 31: a --session that is a link, and a --load that is no folder, exited 1; the README says 2.
TEST_F(TrainCli, ASessionLinkAndALoadThatIsNoFolderExit2) {
  const std::string link = dir_ + "/link.db";
  ASSERT_EQ(::symlink((dir_ + "/nowhere.db").c_str(), link.c_str()), 0);
  auto args = train_args(1);
  args.insert(args.end(), {"--session", link});
  auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(link + " is a symbolic link"), std::string::npos) << r.err;
  struct stat st {};
  EXPECT_NE(::stat((dir_ + "/nowhere.db").c_str(), &st), 0) << "nothing was created at the link's target";
  args = train_args(1);
  args.insert(args.end(), {"--load", dir_ + "/ds.json"});
  r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(dir_ + "/ds.json"), std::string::npos) << r.err;
}

TEST_F(TrainCli, AModelTooLargeToBuildIsOneLineNotABacktrace) {
  // 2^31 x 8192 embeddings: 70 TB of fp32, which no allocator grants.
  const auto r = run_cli({"train", "--config", dir_ + "/ds.json", "--model", "gpt2", "--vocab", "2147483647", "--hidden",
                          "8192", "--heads", "64", "--layers", "1", "--seq-len", "16", "--steps", "1", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot build the gpt2 model ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("make it smaller (--layers, --hidden, --vocab or the model config)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Exception raised from"), std::string::npos) << "a c10 backtrace: " << r.err;
  EXPECT_EQ(r.err.find("frame #"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace shardscope::testing
