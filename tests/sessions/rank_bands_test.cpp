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

// 12 ranks x 8 steps made so that each shortcut of the bands from step_stats meets its edge: lr,
// loss scale, throughput and memory are the same on every rank (flat bands), but rank 5's grad norm
// differs at step 3; rank 0 sends no step 2 (its lowest rank is 1); rank 4 has no TFLOP/s at step 4
// (equal values, not on every rank); a +Inf loss on rank 2 at step 5 and on every rank at step 6; a
// NaN loss (stored NULL) on rank 3 at step 1; rank 6 re-sends step 7 with another lr and step time
// in a later commit (its stats recomputed from the rows).
std::vector<Event> edge_steps(int rank, std::int64_t step, double lr) {
  if (rank == 0 && step == 2) return {};
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1700000000 + static_cast<double>(step);
  m.step_time_ms = 100.0 + rank + static_cast<double>(step);
  m.loss = 3.0 - 0.1 * static_cast<double>(step);
  if (rank == 2 && step == 5) m.loss = INFINITY;
  if (step == 6) m.loss = INFINITY;
  if (rank == 3 && step == 1) m.loss = NAN;
  m.lr = lr;
  m.loss_scale = 65536;
  m.grad_norm = rank == 5 && step == 3 ? 9.0 : 1.5;
  m.samples_per_s = 16;
  m.tokens_per_s = 32768;
  if (!(rank == 4 && step == 4)) m.tflops = 310;
  m.mem_allocated_bytes = std::int64_t{42} << 30;
  m.mem_peak_bytes = (std::int64_t{44} << 30) + 1;
  return {m};
}

void expect_same_bands(const std::vector<RankBand>& a, const std::vector<RankBand>& b, const char* metric) {
  ASSERT_EQ(a.size(), b.size()) << metric;
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(std::string(metric) + " step " + std::to_string(b[i].step));
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].min, b[i].min);
    EXPECT_EQ(a[i].median, b[i].median);
    EXPECT_EQ(a[i].max, b[i].max);
    EXPECT_EQ(a[i].min_rank, b[i].min_rank);
    EXPECT_EQ(a[i].max_rank, b[i].max_rank);
    EXPECT_EQ(a[i].ranks, b[i].ranks);
  }
}

TEST(RankBandsFromStats, EqualTheBandsOfTheRowsStepForStep) {
  const auto path = testing::temp_path("rank_bands_stats");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("uid-edges", {testing::sample_run_start("edges", 12, "{}")});
    for (std::int64_t step = 0; step < 8; ++step) {
      std::vector<Event> batch;
      for (int rank = 0; rank < 12; ++rank)
        for (auto& e : edge_steps(rank, step, 1e-4)) batch.push_back(std::move(e));
      writer.write("uid-edges", batch);
    }
    auto resent = edge_steps(6, 7, 2e-4);
    std::get<StepMetrics>(resent.front()).step_time_ms = 500;
    writer.write("uid-edges", resent);
  }
  StoreOpenOptions read_only;
  read_only.read_only = true;
  Store store = Store::open(path, read_only);
  const std::int64_t id = find_session(store, "uid-edges");
  const std::vector<Metric>& metrics = all_metrics();
  StepBandOptions rows;
  rows.source = BandSource::kRows;
  const auto from_rows = load_step_bands(store, id, metrics, rows);
  const auto from_stats = load_step_bands(store, id, metrics);
  ASSERT_EQ(from_stats.size(), metrics.size());
  for (std::size_t m = 0; m < metrics.size(); ++m) expect_same_bands(from_stats[m], from_rows[m], metric_name(metrics[m]));
  StepBandOptions in_parts;  // the rows' steps split over 4 connections (on a machine of 4 cores or more)
  in_parts.rows_per_reader = 20;
  const auto from_parts = load_step_bands(store, id, metrics, in_parts);
  for (std::size_t m = 0; m < metrics.size(); ++m) expect_same_bands(from_parts[m], from_rows[m], metric_name(metrics[m]));
  // The edges were met: a flat band names the step's lowest rank, the re-sent lr spreads step 7.
  const auto& lr = from_stats[1];
  ASSERT_EQ(lr.size(), 8u);
  EXPECT_EQ(lr[2].min_rank, 1);
  EXPECT_EQ(lr[2].ranks, 11);
  EXPECT_EQ(lr[7].max, 2e-4);
  EXPECT_EQ(lr[7].max_rank, 6);
  const auto& loss = from_stats[0];
  ASSERT_EQ(loss.size(), 7u);  // step 6's losses are all infinite: no band
  EXPECT_EQ(loss[1].ranks, 11);
  EXPECT_EQ(loss[5].ranks, 11);
  testing::remove_store(path);
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
