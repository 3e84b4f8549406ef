// `shardscope sessions check` and `sessions trend` as CI runs them: exit code 1 on a regression,
// 0 on repeats and within-threshold changes, 2 on unusable input; the report's lines and JSON.
#include <variant>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/store_writer.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/sessions/regression_fixtures.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using shardscope::testing::run_cli;
using testing::SyntheticRun;

class SessionsCheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::temp_path("check_cli") + ".db";
    Store store = Store::open_or_create(db_);
    for (std::uint64_t seed : {1, 2}) write(store, "base", seed, 0);
    for (std::uint64_t seed : {3, 4}) write(store, "same", seed, 0);
    write(store, "slow", 5, 6);  // +6 ms of a 100 ms step, in the LayerNorm backward
    SyntheticRun wide;
    wide.name = "wide", wide.seed = 6, wide.train_flags = {"--hidden", "1024"};
    testing::write_synthetic_run(store, wide);
  }
  void TearDown() override { testing::remove_store(db_); }
  static void write(Store& store, const std::string& name, std::uint64_t seed, double extra_ms) {
    SyntheticRun r;
    r.name = name, r.seed = seed, r.layernorm_extra_ms = extra_ms, r.profiled = true;
    testing::write_synthetic_run(store, r);
  }
  shardscope::testing::ProcessResult check(std::vector<std::string> extra) {
    std::vector<std::string> args{"sessions", "check", "--db", db_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  std::string db_;
};

TEST_F(SessionsCheckCli, RepeatsPassAndARegressionFails) {
  const auto same = check({"--baseline", "uid-base-1,uid-base-2", "--candidate", "uid-same-3,uid-same-4"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("OK: no gating metric regressed"), std::string::npos) << same.out;
  const auto slow = check({"--baseline", "uid-base-1", "--candidate", "slow"});
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("FAILED: step_time +"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("is kernel at::native::layer_norm_grad_input_kernel"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("REGRESSION"), std::string::npos);
  // A threshold above the change: the same data passes, and says the change is real but small.
  const auto loose = check({"--baseline", "uid-base-1", "--candidate", "slow", "--fail-on", "step_time:+10%,throughput:-10%"});
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  EXPECT_NE(loose.out.find("within threshold"), std::string::npos) << loose.out;
}

TEST_F(SessionsCheckCli, JsonForScripts) {
  const auto r = check({"--baseline", "uid-base-1", "--candidate", "slow", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["failed"].get<bool>());
  EXPECT_EQ(j["baseline"][0]["name"], "base");
  const auto& step = j["metrics"][0];
  EXPECT_EQ(step["metric"], "step_time");
  EXPECT_EQ(step["verdict"], "regression");
  EXPECT_TRUE(step["gating"].get<bool>());
  EXPECT_GT(step["change"]["low"].get<double>(), 0.03);
  EXPECT_LT(step["change"]["estimate"].get<double>(), step["change"]["high"].get<double>());
  EXPECT_TRUE(j["profiled"].get<bool>());
  EXPECT_EQ(j["contributors"][0]["kind"], "kernel");
  EXPECT_NEAR(j["contributors"][0]["delta_ms"].get<double>(), 6.0, 1e-6);
}

TEST_F(SessionsCheckCli, UnusableInputExitsTwo) {
  const auto models = check({"--baseline", "uid-base-1", "--candidate", "wide"});
  EXPECT_EQ(models.exit_code, 2) << models.out;
  EXPECT_NE(models.err.find("trains another model (gpt2 layers=4 hidden=1024 heads=4)"), std::string::npos) << models.err;
  EXPECT_EQ(check({"--baseline", "uid-base-1", "--candidate", "nosuch"}).exit_code, 2);
  const auto bad = check({"--baseline", "uid-base-1", "--candidate", "slow", "--fail-on", "throughput:+3%"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("throughput gets worse downwards: write -3%"), std::string::npos) << bad.err;
  EXPECT_EQ(check({"--baseline", "uid-base-1"}).exit_code, 2);
  EXPECT_EQ(run_cli({"sessions", "check", "--db", db_ + ".missing", "--baseline", "1", "--candidate", "2"}).exit_code, 2);
}

TEST_F(SessionsCheckCli, TextFromTheFileIsEscaped) {
  {
    Store store = Store::open_or_create(db_);
    for (std::uint64_t seed : {7, 8}) {
      SyntheticRun r;
      r.name = "evil\x1b[31m", r.seed = seed;
      auto events = testing::synthetic_run(r);
      for (auto& e : events)
        if (auto* t = std::get_if<TimerBreakdown>(&e)) t->timers.push_back({"\x1b[2Jwipe", seed == 7 ? 1.0 : 9.0});
      StoreWriter(store).write("uid-evil-" + std::to_string(seed), events);
    }
  }
  const auto r = check({"--baseline", "uid-evil-7", "--candidate", "uid-evil-8", "--fail-on", "phase:*:+5%"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // the hostile timer regressed 9-fold
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal";
  EXPECT_NE(r.out.find("FAILED: phase:\\x1b[2Jwipe"), std::string::npos) << r.out;
}

TEST(SessionsTrendCli, FiftySessionsByVersionAndByTag) {
  const std::string db = testing::temp_path("trend_cli") + ".db";
  {
    Store store = Store::open_or_create(db);
    for (int v = 0; v < 5; ++v)
      for (int k = 0; k < 11; ++k) {
        SyntheticRun r;
        r.name = "nightly", r.seed = static_cast<std::uint64_t>(100 * v + k), r.steps = 50;
        r.shardscope_version = "0.4." + std::to_string(v), r.git_hash = "";
        r.started_at = 1795900000 + 3600.0 * (11 * v + k);
        r.peak_bytes = (std::int64_t{1} << 30) + (v >= 2 ? (std::int64_t{1} << 27) : 0);  // +12.5 % from 0.4.2
        r.tags = {k % 2 ? "odd" : "even"};
        testing::write_synthetic_run(store, r);
      }
  }
  const auto text = run_cli({"sessions", "trend", "peak_memory", "--db", db, "--by", "version"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("0.4.2"), std::string::npos);
  EXPECT_NE(text.out.find("<- stepped"), std::string::npos) << text.out;
  const auto json = run_cli({"sessions", "trend", "step_time", "--db", db, "--by", "version", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["groups"].size(), 5u);
  for (const auto& g : j["groups"]) {
    EXPECT_EQ(g["sessions"].size(), 11u);
    if (g.contains("from_previous")) {
      EXPECT_NE(g["from_previous"]["verdict"], "regression") << g.dump();  // nothing moved
    }
  }
  const auto memory = nlohmann::json::parse(run_cli({"sessions", "trend", "peak_memory", "--db", db, "--by", "version", "--json"}).out);
  EXPECT_EQ(memory["groups"][2]["from_previous"]["verdict"], "regression");
  EXPECT_EQ(memory["groups"][3]["from_previous"]["verdict"], "within_noise");
  const auto tags = nlohmann::json::parse(run_cli({"sessions", "trend", "step_time", "--db", db, "--by", "tag", "--json"}).out);
  EXPECT_EQ(tags["groups"].size(), 2u);
  EXPECT_EQ(run_cli({"sessions", "trend", "step_tme", "--db", db}).exit_code, 2);
  EXPECT_EQ(run_cli({"sessions", "trend", "step_time", "--db", db, "--by", "week"}).exit_code, 2);
  testing::remove_store(db);
}

}  // namespace
}  // namespace shardscope::sessions
