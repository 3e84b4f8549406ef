// Many-rank reads (issue 35 item 4): per-step bands across ranks and the rank x step grid, against
// values worked out by hand from a small session with one straggler.
#include <cmath>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/rank_bands.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

// 12 ranks x 10 steps: step time 100 + rank ms, except rank 7, a straggler at 300 ms from step 4;
// timer "forward" 10 ms everywhere, 40 ms on rank 7; two all_reduce records a step of 1 ms and 2 ms.
std::vector<Event> twelve_ranks() {
  std::vector<Event> events{testing::sample_run_start("bands", 12, "{}")};
  for (int step = 0; step < 10; ++step)
    for (int rank = 0; rank < 12; ++rank) {
      StepMetrics m;
      m.rank = rank;
      m.step = step;
      m.wall_time = 1700000000 + step;
      m.step_time_ms = rank == 7 && step >= 4 ? 300.0 : 100.0 + rank;
      if (rank != 11) m.loss = 2.0 + rank;  // rank 11 reports no loss
      events.push_back(m);
      events.push_back(TimerBreakdown{rank, step, {{"forward", rank == 7 ? 40.0 : 10.0}}});
      events.push_back(CommRecord{rank, step, "all_reduce", 1 << 20, 1000, 1, 1, 12});
      events.push_back(CommRecord{rank, step, "all_reduce", 1 << 20, 2000, 1, 1, 12});
    }
  return events;
}

class RankBands : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::temp_path("rank_bands");
    {
      Store store = Store::open_or_create(path_);
      StoreWriter writer(store);
      writer.write("uid-bands", twelve_ranks());
    }
    store_.emplace(Store::open(path_));
    id_ = find_session(*store_, "uid-bands");
  }
  void TearDown() override {
    store_.reset();
    testing::remove_store(path_);
  }
  std::string path_;
  std::optional<Store> store_;
  std::int64_t id_ = 0;
};

TEST(RankBand, MinMedianMaxAndTheRanksAtTheEnds) {
  std::vector<RankValue> odd{{3, 5.0}, {1, 9.0}, {2, 1.0}};
  const RankBand a = rank_band(4, odd);
  EXPECT_EQ(a.step, 4);
  EXPECT_EQ(a.ranks, 3);
  EXPECT_EQ(a.min, 1.0);
  EXPECT_EQ(a.min_rank, 2);
  EXPECT_EQ(a.median, 5.0);
  EXPECT_EQ(a.max, 9.0);
  EXPECT_EQ(a.max_rank, 1);
  std::vector<RankValue> even{{0, 4.0}, {5, 8.0}, {6, 8.0}, {7, 1.0}};
  const RankBand b = rank_band(0, even);
  EXPECT_EQ(b.median, 6.0);   // (4 + 8) / 2
  EXPECT_EQ(b.max_rank, 5);  // the lowest rank holding the max
}

TEST_F(RankBands, StepBandsNameTheStragglerAndSkipRanksWithoutTheMetric) {
  const auto bands = load_step_bands(*store_, id_, {Metric::kStepTime, Metric::kLoss});
  ASSERT_EQ(bands.size(), 2u);
  ASSERT_EQ(bands[0].size(), 10u);
  EXPECT_EQ(bands[0][0].min, 100.0);
  EXPECT_EQ(bands[0][0].max, 111.0);
  EXPECT_EQ(bands[0][0].max_rank, 11);
  EXPECT_EQ(bands[0][0].median, 105.5);  // 100..111: (105 + 106) / 2
  EXPECT_EQ(bands[0][5].max, 300.0);
  EXPECT_EQ(bands[0][5].max_rank, 7);
  EXPECT_EQ(bands[0][5].median, 105.5);  // 100..106, 108..111, 300: the sixth and seventh are 105 and 106
  EXPECT_EQ(bands[1][0].ranks, 11);
  EXPECT_EQ(bands[1][0].max, 12.0);
}

TEST_F(RankBands, SeriesListsStepTimeTimersAndOps) {
  const auto series = list_rank_step_series(*store_, id_);
  std::vector<std::string> keys;
  for (const auto& s : series) keys.push_back(s.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"step_time_ms", "loss", "timer:forward", "comm:all_reduce"}));
  EXPECT_EQ(series[0].title, "step time");
  EXPECT_EQ(series[0].unit, "ms");
  EXPECT_EQ(series[3].title, "all_reduce wait");
}

TEST_F(RankBands, TimerAndOpBandsReadTheirTables) {
  const auto forward = load_series_bands(*store_, id_, "timer:forward");
  ASSERT_EQ(forward.size(), 10u);
  EXPECT_EQ(forward[2].max, 40.0);
  EXPECT_EQ(forward[2].max_rank, 7);
  EXPECT_EQ(forward[2].median, 10.0);
  const auto wait = load_series_bands(*store_, id_, "comm:all_reduce");
  ASSERT_EQ(wait.size(), 10u);
  EXPECT_DOUBLE_EQ(wait[0].median, 3.0);  // 1 + 2 ms summed per rank and step
}

TEST_F(RankBands, TheGridMakesTheStragglerARowAndBinsSteps) {
  const RankStepGrid grid = load_rank_step_grid(*store_, id_, "step_time_ms", {}, 5);
  ASSERT_EQ(grid.ranks.size(), 12u);
  EXPECT_EQ(grid.columns, 5);
  EXPECT_EQ(grid.steps_per_column, 2);
  EXPECT_EQ(grid.at(0, 0), 100.0);
  EXPECT_EQ(grid.at(7, 1), 107.0);  // steps 2 and 3, before the slowdown
  EXPECT_EQ(grid.at(7, 2), 300.0);  // steps 4 and 5
  EXPECT_EQ(grid.at(7, 4), 300.0);
  EXPECT_EQ(grid.max, 300.0);
  EXPECT_EQ(grid.min, 100.0);
  const RankStepGrid some = load_rank_step_grid(*store_, id_, "timer:forward", {7, 3});
  EXPECT_EQ(some.ranks, (std::vector<int>{7, 3}));
  EXPECT_EQ(some.columns, 10);
  EXPECT_EQ(some.at(0, 0), 40.0);
  EXPECT_EQ(some.at(1, 9), 10.0);
}

TEST_F(RankBands, AnUnknownSeriesIsRefusedWithTheKnownOnes) {
  try {
    load_rank_step_grid(*store_, id_, "timer:backward");
    FAIL();
  } catch (const SessionsError& e) {
    EXPECT_STREQ(e.what(), "'timer:backward' is not a per-rank series of this session; it has step_time_ms, loss, "
                           "timer:forward, comm:all_reduce");
  }
}

}  // namespace
}  // namespace shardscope::sessions
