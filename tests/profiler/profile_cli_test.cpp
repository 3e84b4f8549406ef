// `shardscope sessions show SESSION --profile [--json]` run as a user would.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::profiler {
namespace {

using namespace sessions;
using shardscope::testing::run_cli;

// Session "windowed": 2 ranks, steps 0-1; rank 0 step times 50, 60 and rank 1 70, 40; timers
// forward 10, backward 20, step 5 on both; rank 0 has a window: gemm [0, 3) ms on stream 1 and
// ncclDevKernel_AllReduce [2, 6) ms on stream 2 (1 ms of the 4 ms hidden), idle 0 of 6 ms.
// Session "plain": the same without the window.
class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    Store store = Store::open_or_create(db_path());
    StoreWriter writer(store);
    for (const char* name : {"windowed", "plain"}) {
      RunStart start;
      start.name = name;
      start.world_size = 2;
      std::vector<Event> events{start};
      const double times[2][2] = {{50, 60}, {70, 40}};
      for (int rank = 0; rank < 2; ++rank)
        for (std::int64_t step = 0; step < 2; ++step) {
          events.push_back(TimerBreakdown{rank, step, {{"forward", 10}, {"backward", 20}, {"step", 5}}});
          StepMetrics m;
          m.rank = rank;
          m.step = step;
          m.step_time_ms = times[rank][step];
          events.push_back(m);
        }
      if (std::string(name) == "windowed") {
        ActivityBatch batch{0, {}};
        batch.records.push_back({ActivityKind::kKernel, "gemm", 0, 3000000, 0, 1, 0, 0});
        batch.records.push_back({ActivityKind::kKernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 2000000,
                                 6000000, 0, 2, 0, 0});
        events.push_back(batch);
      }
      writer.write(std::string("uid-") + name, events);
    }
  }
  std::string db_path() const { return dir_.file("runs.db"); }
  test::TempDir dir_;
};

TEST_F(ProfileCli, PrintsTablesAfterTheSummary) {
  const auto r = run_cli({"sessions", "show", "windowed", "--db", db_path(), "--profile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary_at = r.out.find("step time median / p90 (ms)");
  const auto phases_at = r.out.find("== Time per phase ==");
  ASSERT_NE(summary_at, std::string::npos) << r.out;
  ASSERT_NE(phases_at, std::string::npos) << r.out;
  EXPECT_LT(summary_at, phases_at);
  for (const char* part : {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "25.0 %", "== GPU idle time",
                           "== Slowest rank per step =="})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}

TEST_F(ProfileCli, JsonCarriesTheAnalyses) {
  const auto r = run_cli({"sessions", "show", "windowed", "--db", db_path(), "--profile", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("summary"));
  const auto& p = j["profile"];
  EXPECT_TRUE(p["has_profiled_window"].get<bool>());
  EXPECT_EQ(p["comm_overlap"][0]["method"], "activity");
  EXPECT_DOUBLE_EQ(p["comm_overlap"][0]["comm_ms"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(p["comm_overlap"][0]["hidden_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p["gpu_idle"][0]["idle_ms"].get<double>(), 0.0);
  // Step 0: rank 1 (70) slowest, median 60, lag 10; step 1: rank 0 (60), median 50.
  EXPECT_EQ(p["stragglers"]["steps"][0]["slowest_rank"], 1);
  EXPECT_DOUBLE_EQ(p["stragglers"]["steps"][0]["lag_ms"].get<double>(), 10.0);
  EXPECT_EQ(p["stragglers"]["steps"][1]["slowest_rank"], 0);
  EXPECT_DOUBLE_EQ(p["phases"]["ranks"][1]["steps"][0]["other_ms"].get<double>(), 35.0);
  const auto plain = run_cli({"sessions", "show", "plain", "--db", db_path(), "--json"});
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("profile"));
}

TEST_F(ProfileCli, SaysWhenThereIsNoProfiledWindow) {
  const auto r = run_cli({"sessions", "show", "plain", "--db", db_path(), "--profile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("this session has no profiled window"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== Time per phase =="), std::string::npos);
  const auto j = nlohmann::json::parse(run_cli({"sessions", "show", "plain", "--db", db_path(), "--profile", "--json"}).out);
  EXPECT_FALSE(j["profile"]["has_profiled_window"].get<bool>());
  EXPECT_EQ(j["profile"]["comm_overlap"][0]["method"], "unavailable");
}

}  // namespace
}  // namespace shardscope::profiler
