#include "sessions/session_reader.hpp"

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

class SessionReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::temp_path("reader");
    store_ = std::make_unique<Store>(Store::open_or_create(path_));
    StoreWriter writer(*store_);
    std::vector<Event> a{testing::sample_run_start("alpha", 2, R"({"zero_optimization": {"stage": 2}})")};
    for (auto& e : testing::sample_steps(2, 10)) a.push_back(e);
    a.push_back(ActivityBatch{0, {{ActivityKind::kKernel, "k2", 200, 260, 0, 7, 0, 1},
                                  {ActivityKind::kKernel, "k1", 100, 150, 0, 7, 0, 1}}});
    a.push_back(NvtxBatch{0, {{"forward", "", 90, 300, -1, 11, 1}}});
    a.push_back(LogLine{1, 5, LogLevel::kWarning, "overflow at step 3"});
    a.push_back(LogLine{0, 6, LogLevel::kInfo, "saved checkpoint"});
    a.push_back(RunEnd{"completed", 1795900100, 100, {{0, 0}, {1, 0}}});
    writer.write("uid-alpha-000001", a);
    RunStart b = testing::sample_run_start("beta", 1, R"({"zero_optimization": {"stage": 3}})");
    b.started_at += 86400;
    b.environment.versions.shardscope = "0.2.0";
    b.ranks[0].host = "node-b";
    b.tags = {"stage3"};
    std::vector<Event> events{b};
    for (auto& e : testing::sample_steps(1, 4)) events.push_back(e);
    writer.write("uid-beta-0000002", events);
  }
  void TearDown() override {
    store_.reset();
    testing::remove_store(path_);
  }
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(SessionReaderTest, ListsNewestFirstWithFilters) {
  auto all = list_sessions(*store_);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "beta");
  EXPECT_EQ(all[1].name, "alpha");
  EXPECT_EQ(all[1].status, "completed");
  EXPECT_EQ(all[0].status, "running");
  EXPECT_EQ(all[1].last_step, 9);
  EXPECT_EQ(all[1].hosts, std::vector<std::string>{"node-a"});
  SessionFilter f;
  f.name_contains = "ALP";
  EXPECT_EQ(list_sessions(*store_, f).size(), 1u);
  f = {};
  f.host = "node-b";
  ASSERT_EQ(list_sessions(*store_, f).size(), 1u);
  EXPECT_EQ(list_sessions(*store_, f)[0].name, "beta");
  f = {};
  f.version = "0.2";
  EXPECT_EQ(list_sessions(*store_, f).size(), 1u);
  f.version = "0.1.0";
  EXPECT_EQ(list_sessions(*store_, f).at(0).name, "alpha");
  f = {};
  f.started_after = 1795900000 + 3600;
  EXPECT_EQ(list_sessions(*store_, f).at(0).name, "beta");
  f = {};
  f.started_before = 1795900000 + 3600;
  EXPECT_EQ(list_sessions(*store_, f).at(0).name, "alpha");
  f = {};
  f.config_hash_prefix = all[1].config_hash.substr(0, 6);
  EXPECT_EQ(list_sessions(*store_, f).at(0).name, "alpha");
  f = {};
  f.tag = "stage3";
  EXPECT_EQ(list_sessions(*store_, f).at(0).name, "beta");
  EXPECT_EQ(all[1].config_hash, compute_config_hash(R"({ "zero_optimization":{"stage":2} })"));
}

TEST_F(SessionReaderTest, FindsSessionsByIdUidPrefixAndName) {
  const auto alpha = find_session(*store_, "alpha");
  EXPECT_EQ(find_session(*store_, std::to_string(alpha)), alpha);
  EXPECT_EQ(find_session(*store_, "uid-alpha"), alpha);
  try {
    find_session(*store_, "gamma");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  try {
    find_session(*store_, "uid-");  // too short to be a prefix, not a name
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST_F(SessionReaderTest, LoadsDetailsCurvesAndRawRecords) {
  const auto id = find_session(*store_, "alpha");
  const auto d = load_session(*store_, id);
  EXPECT_EQ(d.command_line.at(1), "train");
  ASSERT_TRUE(d.environment.has_value());
  EXPECT_EQ(d.environment->accelerator.gpus.at(0).name, "NVIDIA H200");
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[1].exit_code, 0);
  EXPECT_EQ(d.ranks[1].info.device, "cuda:1");

  const auto loss = load_curve(*store_, id, Metric::kLoss);
  ASSERT_EQ(loss.size(), 10u);
  EXPECT_DOUBLE_EQ(loss[4].value, 6.0);
  const auto step_time = load_curve(*store_, id, Metric::kStepTime);  // slowest rank: 100 + 2*step
  EXPECT_DOUBLE_EQ(step_time[5].value, 110.0);
  EXPECT_DOUBLE_EQ(load_curve(*store_, id, Metric::kStepTime, 0)[5].value, 105.0);
  EXPECT_DOUBLE_EQ(load_curve(*store_, id, Metric::kTokensPerS)[0].value, 2000.0);  // summed over 2 ranks
  EXPECT_EQ(load_timer_names(*store_, id), (std::vector<std::string>{"backward", "forward"}));
  EXPECT_DOUBLE_EQ(load_timer_curve(*store_, id, "backward")[2].value, 60.0);
  EXPECT_EQ(load_steps(*store_, id).size(), 20u);
  EXPECT_EQ(load_steps(*store_, id, 1).size(), 10u);
  const auto kernels = load_activities(*store_, id, 0);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "k1");  // by start time
  EXPECT_EQ(load_nvtx(*store_, id, 0).at(0).end_ns, 300);
  EXPECT_EQ(load_logs(*store_, id).size(), 2u);
  EXPECT_EQ(load_logs(*store_, id, std::nullopt, LogLevel::kWarning).at(0).text, "overflow at step 3");
}

TEST_F(SessionReaderTest, SummaryMatchesHandComputedFigures) {
  const auto s = summarize_session(*store_, find_session(*store_, "alpha"));
  EXPECT_EQ(s.steps, 10);
  // Per-step slowest rank: 100, 102, ..., 118. Median = 109; p90 at rank 8.1: 116 + 0.1*2.
  EXPECT_DOUBLE_EQ(*s.median_step_ms, 109.0);
  EXPECT_DOUBLE_EQ(*s.p90_step_ms, 116.2);
  EXPECT_DOUBLE_EQ(*s.tokens_per_s, 2000.0);
  EXPECT_DOUBLE_EQ(*s.tflops_per_gpu, 50.0);
  EXPECT_DOUBLE_EQ(*s.mfu, 0.5);
  EXPECT_DOUBLE_EQ(*s.final_loss, 1.0);
  EXPECT_EQ(*s.final_loss_step, 9);
  EXPECT_DOUBLE_EQ(*s.best_loss, 1.0);
  EXPECT_EQ(s.skipped_steps, 1);
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(*s.memory[1].peak_bytes, 2ll << 30);
  EXPECT_EQ(*s.memory[1].reserved_bytes, 3ll << 30);
  // 10 all-reduces of 10 ms per rank = 0.1 s; on a tie the lowest rank: rank 0, 1000 + 45 ms.
  EXPECT_DOUBLE_EQ(*s.comm_time_s, 0.1);
  EXPECT_NEAR(*s.comm_fraction, 0.1 / 1.045, 1e-12);
  ASSERT_EQ(s.comm_ops.size(), 1u);
  EXPECT_EQ(s.comm_ops[0].count, 20);
  ASSERT_EQ(s.timers.size(), 2u);
  EXPECT_DOUBLE_EQ(s.timers[1].median_ms, 30.0);
  EXPECT_DOUBLE_EQ(s.timers[1].total_s, 0.3);
  EXPECT_EQ(s.activity_records, 2);
  EXPECT_EQ(s.warning_logs, 1);

  SummaryOptions warm;
  warm.warmup_steps = 5;  // steps 5..9 remain: 110..118, median 114
  EXPECT_DOUBLE_EQ(*summarize_session(*store_, s.info.id, warm).median_step_ms, 114.0);
}

// The log levels are counted over the session's range of log ids: lines of two sessions written in
// turn share that range, and each summary counts only its own.
TEST(SessionSummaryLogs, CountTheWarningsAndErrorsOfTheirSessionOnly) {
  const auto path = testing::temp_path("summary_logs");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("uid-logs-a", {testing::sample_run_start("a", 2, "{}")});
    writer.write("uid-logs-b", {testing::sample_run_start("b", 2, "{}")});
    for (int i = 0; i < 6; ++i) {
      writer.write("uid-logs-a", {LogLine{i % 2, 1.0 * i, i < 4 ? LogLevel::kWarning : LogLevel::kError, "a"}});
      writer.write("uid-logs-b", {LogLine{0, 1.0 * i, i < 1 ? LogLevel::kError : LogLevel::kInfo, "b"}});
    }
  }
  Store store = Store::open(path);
  const SessionSummary a = summarize_session(store, find_session(store, "uid-logs-a"));
  const SessionSummary b = summarize_session(store, find_session(store, "uid-logs-b"));
  EXPECT_EQ(a.warning_logs, 4);
  EXPECT_EQ(a.error_logs, 2);
  EXPECT_EQ(b.warning_logs, 0);
  EXPECT_EQ(b.error_logs, 1);
  testing::remove_store(path);
}

TEST_F(SessionReaderTest, DeleteRemovesOnlyTheNamedSession) {
  const auto alpha = find_session(*store_, "alpha");
  const auto beta = find_session(*store_, "beta");
  EXPECT_EQ(delete_sessions(*store_, {alpha}), 1u);
  EXPECT_EQ(list_sessions(*store_).size(), 1u);
  EXPECT_TRUE(load_steps(*store_, alpha).empty());
  EXPECT_TRUE(load_activities(*store_, alpha, 0).empty());
  EXPECT_TRUE(load_logs(*store_, alpha).empty());
  EXPECT_EQ(load_steps(*store_, beta).size(), 4u);
  EXPECT_EQ(delete_sessions(*store_, {alpha}), 0u);
}

TEST(Percentile, MatchesNumpyLinearInterpolation) {
  // numpy.percentile([1, 2, 3, 4], [50, 90]) -> 2.5, 3.7
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.9), 7);
  EXPECT_THROW(percentile({}, 0.5), SessionsError);
}

}  // namespace
}  // namespace shardscope::sessions
