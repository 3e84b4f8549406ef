// The reader's incremental and windowed queries, used by the GUI's live view and profile view:
// each returns exactly the rows a full read filtered by hand would, on a store written while
// another connection reads it.
#include <gtest/gtest.h>

#include <algorithm>

#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

class IncrementalReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::temp_path("incremental");
    writer_store_ = std::make_unique<Store>(Store::open_or_create(path_));
    writer_ = std::make_unique<StoreWriter>(*writer_store_);
    std::vector<Event> events{testing::sample_run_start("live", 3, R"({"zero_optimization": {"stage": 1}})")};
    for (auto& e : testing::sample_steps(3, 5)) events.push_back(e);
    writer_->write(kUid, events);
    reader_ = std::make_unique<Store>(Store::open(path_, {}));
    id_ = find_session(*reader_, kUid);
  }
  void TearDown() override {
    reader_.reset();
    writer_.reset();
    writer_store_.reset();
    testing::remove_store(path_);
  }
  static constexpr const char* kUid = "uid-live-00000001";
  std::string path_;
  std::unique_ptr<Store> writer_store_, reader_;
  std::unique_ptr<StoreWriter> writer_;
  std::int64_t id_ = 0;
};

TEST_F(IncrementalReaderTest, StepsAfterFollowAGrowingSessionPerRank) {
  EXPECT_EQ(load_step_ranks(*reader_, id_), (std::vector<int>{0, 1, 2}));
  auto rank1 = load_steps_after(*reader_, id_, 1, 2);
  ASSERT_EQ(rank1.size(), 2u);  // steps 3 and 4
  EXPECT_EQ(rank1[0].step, 3);
  EXPECT_TRUE(rank1[0].skipped);  // the fixture's rank 1 skips step 3
  EXPECT_DOUBLE_EQ(*rank1[1].step_time_ms, 100.0 + 2 * 4);
  EXPECT_TRUE(load_steps_after(*reader_, id_, 0, 4).empty());
  // Rank 2 commits step 5 before rank 0 does: each rank's cursor sees only its own new rows.
  StepMetrics late;
  late.rank = 2;
  late.step = 5;
  late.loss = 0.5;
  writer_->write(kUid, {late});
  EXPECT_TRUE(load_steps_after(*reader_, id_, 0, 4).empty());
  auto rank2 = load_steps_after(*reader_, id_, 2, 4);
  ASSERT_EQ(rank2.size(), 1u);
  EXPECT_EQ(rank2[0].step, 5);
  EXPECT_DOUBLE_EQ(*rank2[0].loss, 0.5);
  // The same rows as a full read of that rank, filtered by hand.
  auto all = load_steps(*reader_, id_, 2);
  all.erase(std::remove_if(all.begin(), all.end(), [](const StepMetrics& m) { return m.step <= 1; }), all.end());
  auto after = load_steps_after(*reader_, id_, 2, 1);
  ASSERT_EQ(after.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(after[i].step, all[i].step);
}

TEST_F(IncrementalReaderTest, TimerBreakdownsTakeTheSlowestRankPerStep) {
  writer_->write(kUid, {TimerBreakdown{2, 3, {{"forward", 45}, {"step", 5}}}});  // rank 2 slower at step 3
  auto rows = load_timer_breakdowns_after(*reader_, id_, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 3);
  EXPECT_EQ(rows[0].rank, -1);
  ASSERT_EQ(rows[0].timers.size(), 3u);  // backward, forward, step: by name
  EXPECT_EQ(rows[0].timers[0].name, "backward");
  EXPECT_DOUBLE_EQ(rows[0].timers[0].ms, 60);
  EXPECT_EQ(rows[0].timers[1].name, "forward");
  EXPECT_DOUBLE_EQ(rows[0].timers[1].ms, 45);
  EXPECT_DOUBLE_EQ(rows[0].timers[2].ms, 5);
  EXPECT_EQ(rows[1].timers.size(), 2u);
}

TEST_F(IncrementalReaderTest, LogsAfterAnIdPageThroughArrivals) {
  writer_->write(kUid, {LogLine{0, 1, LogLevel::kInfo, "one"}, LogLine{2, 2, LogLevel::kError, "two"},
                        LogLine{1, 3, LogLevel::kWarning, "three"}});
  auto first = load_logs_after(*reader_, id_, 0, 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].line.text, "one");
  EXPECT_EQ(first[1].line.rank, 2);
  EXPECT_EQ(first[1].line.level, LogLevel::kError);
  auto rest = load_logs_after(*reader_, id_, first.back().id);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].line.text, "three");
  EXPECT_TRUE(load_logs_after(*reader_, id_, rest[0].id).empty());
}

TEST_F(IncrementalReaderTest, ActivityWindowKeepsOverlappingRecords) {
  ActivityBatch batch{1, {{ActivityKind::kKernel, "long", 0, 1000, 0, 7, 0, 0},
                          {ActivityKind::kKernel, "a", 100, 150, 0, 7, 0, 0},
                          {ActivityKind::kMemcpy, "HtoD", 400, 600, 0, 8, 4096, 0},
                          {ActivityKind::kKernel, "late", 2000, 2100, 0, 7, 0, 1}}};
  writer_->write(kUid, {batch, NvtxBatch{2, {{"forward", "", 0, 10, -1, 1, 0}}}});
  auto window = load_activities_window(*reader_, id_, 1, 500, 1500);
  ASSERT_EQ(window.size(), 2u);  // "long" began before the window, HtoD straddles its start
  EXPECT_EQ(window[0].name, "long");
  EXPECT_EQ(window[1].name, "HtoD");
  EXPECT_EQ(window[1].bytes, 4096);
  EXPECT_EQ(load_activities_window(*reader_, id_, 1, 0, 5000).size(), 4u);
  EXPECT_TRUE(load_activities_window(*reader_, id_, 1, 1000, 2000).empty());  // [start, end) both sides
  EXPECT_EQ(load_profiled_ranks(*reader_, id_), (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace shardscope::sessions
