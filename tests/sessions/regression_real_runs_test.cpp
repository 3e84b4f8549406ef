// `sessions check` on real CPU runs of the engine (issue 30): quadrupling gradient accumulation is a
// genuine step-time regression and must fail; repeats of one config, interleaved with the
// candidate's runs so both sides see the same host load, must pass. ctest runs it alone (SERIAL).
// The runs are tiny (a 2-layer GPT-2, 60 steps) so the test stays within seconds.
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli_process.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using shardscope::testing::run_cli;

std::string write_config(const std::string& path, int accumulation) {
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": )" << accumulation
                      << R"(, "optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}, "wall_clock_breakdown": true})";
  return path;
}

void train(const std::string& db, const std::string& config, const std::string& name) {
  const auto r = run_cli({"train", "--config", config, "--model", "gpt2", "--layers", "2", "--hidden", "64", "--heads", "2",
                          "--seq-len", "64", "--vocab", "512", "--steps", "60", "--device", "cpu", "--session", db, "--name", name},
                         {"OMP_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

const nlohmann::json& metric(const nlohmann::json& report, const std::string& name) {
  for (const auto& m : report["metrics"])
    if (m["metric"] == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(SessionsCheckRealRuns, AccumulationIsARegressionAndRepeatsAreNot) {
  const std::string stem = testing::temp_path("real_runs");
  const std::string db = stem + ".db";
  const std::string one = write_config(stem + "_accum1.json", 1), four = write_config(stem + "_accum4.json", 4);
  // Interleaved, so both sides see the same host; three runs a side, since two repeats that differ
  // by 25 % (a 10 ms step on a shared VM does) leave the spread's t interval too wide to decide.
  for (int i = 1; i <= 3; ++i) {
    train(db, one, "base-" + std::to_string(2 * i - 1));
    train(db, four, "accum-" + std::to_string(i));
    train(db, one, "base-" + std::to_string(2 * i));
  }
  const auto accum = run_cli({"sessions", "check", "--db", db, "--baseline", "base-1,base-3,base-5", "--candidate",
                              "accum-1,accum-2,accum-3", "--json"});
  ASSERT_EQ(accum.exit_code, 1) << accum.out << accum.err;
  const auto a = nlohmann::json::parse(accum.out);
  EXPECT_EQ(metric(a, "step_time")["verdict"], "regression");
  // Four micro-steps per step: about +300 %. (At two, +100 %, one run of six caught in a burst of
  // this VM's neighbours left the 3 + 3 interval holding 0 about once in sixteen tries.)
  EXPECT_GT(metric(a, "step_time")["change"]["estimate"].get<double>(), 1.0);
  EXPECT_GT(metric(a, "phase:forward")["change"]["estimate"].get<double>(), 0.0);
  bool accumulation_named = false;
  for (const auto& c : a["changes"]) accumulation_named = accumulation_named || c["path"] == "gradient_accumulation_steps";
  EXPECT_TRUE(accumulation_named) << a["changes"].dump();
  // The repeats split so each side spans the whole test (runs 1, 6, 7 against 3, 4, 9 of nine): the
  // host here drifts by 15 % over a minute, which early-against-late repeats would call a change.
  const auto same = run_cli({"sessions", "check", "--db", db, "--baseline", "base-1,base-4,base-5", "--candidate", "base-2,base-3,base-6"});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  testing::remove_store(db);
  std::remove(one.c_str());
  std::remove(four.c_str());
}

}  // namespace
}  // namespace shardscope::sessions
