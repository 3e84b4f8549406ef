// Schema 12's stored bands (sessions/store_bands.hpp): the bands load_step_bands reads from
// step_bands must be the bands of the rows (BandSource::kRows) step for step, while a run's rows of
// a step arrive over many commits in any rank order, some never (a rank that stopped), some twice
// (a re-sent step), with NaN and infinite values, on odd and even rank counts; what the writer
// keeps must equal what the migration computes from the rows; and a band that is missing or was
// made of other rows than the step has is read from the rows instead.
#include "sessions/store_bands.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sessions/rank_bands.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_schema.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using testing::remove_store;
using testing::temp_path;

constexpr std::int64_t kSteps = 9;

// Rank `rank`'s row of `step` (`again`: its re-sent row). Step times differ by rank with ties
// (rank % 5), the loss is flat but for rank 1 at step 2 and infinite on rank 2 at step 4 and on
// every rank at step 5, NaN (stored NULL) on rank 3 at step 1; the lr differs only where re-sent;
// odd ranks have no samples/s and rank 4 no TFLOP/s; memory is flat but for the last rank's peak.
StepMetrics row_of(int rank, int ranks, std::int64_t step, bool again) {
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1700000000 + static_cast<double>(step);
  m.step_time_ms = 100.0 + rank % 5 + static_cast<double>(step) + (again ? 250 : 0);
  m.loss = rank == 1 && step == 2 ? 7.0 : 3.0 - 0.1 * static_cast<double>(step);
  if ((rank == 2 && step == 4) || step == 5) m.loss = INFINITY;
  if (rank == 3 && step == 1) m.loss = NAN;
  m.lr = again ? 2e-4 : 1e-4;
  m.loss_scale = 65536;
  m.grad_norm = 1.5 + 0.01 * ((rank * 7 + static_cast<int>(step)) % 3);
  if (rank % 2 == 0) m.samples_per_s = 16 + rank;
  m.tokens_per_s = 32768;
  if (rank != 4) m.tflops = 310 + (step == 6 ? -rank : 0);
  m.mem_allocated_bytes = std::int64_t{42} << 30;
  m.mem_reserved_bytes = std::int64_t{43} << 30;
  m.mem_peak_bytes = (std::int64_t{44} << 30) + (rank == ranks - 1 ? 1 : 0);
  return m;
}

// Every rank's rows of kSteps steps, cut into commits of 1 to ranks/2 rows in an order where a
// rank runs a step or two ahead of another. Rank 2 sends no step 3; the last rank stops after
// step kSteps - 3 (the last steps stay incomplete); rank 0 re-sends step 6 at the end.
std::vector<std::vector<Event>> commits_of(int ranks, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::pair<double, StepMetrics>> rows;  // (when it is sent, the row)
  std::uniform_real_distribution<double> jitter(0, 2.5);
  for (std::int64_t step = 0; step < kSteps; ++step)
    for (int rank = 0; rank < ranks; ++rank) {
      if ((rank == 2 && step == 3) || (rank == ranks - 1 && step > kSteps - 3)) continue;
      rows.emplace_back(static_cast<double>(step) + jitter(random), row_of(rank, ranks, step, false));
    }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  rows.emplace_back(kSteps + 1.0, row_of(0, ranks, 6, true));
  std::vector<std::vector<Event>> out;
  std::uniform_int_distribution<int> size(1, std::max(1, ranks / 2));
  for (std::size_t i = 0; i < rows.size();) {
    out.emplace_back();
    for (int n = size(random); n > 0 && i < rows.size(); --n) out.back().push_back(rows[i++].second);
  }
  return out;
}

// A session "uid" of `ranks` ranks written through the store writer, commit by commit (commits_of).
void write_session(const std::string& path, int ranks, unsigned seed) {
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  writer.write("uid", {testing::sample_run_start("bands", ranks, "{}")});
  for (const auto& commit : commits_of(ranks, seed)) writer.write("uid", commit);
}

void expect_same_bands(const std::vector<std::vector<RankBand>>& a, const std::vector<std::vector<RankBand>>& b,
                       const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t m = 0; m < a.size(); ++m) {
    SCOPED_TRACE(where + ", " + metric_name(all_metrics()[m]));
    ASSERT_EQ(a[m].size(), b[m].size());
    for (std::size_t i = 0; i < a[m].size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(b[m][i].step));
      EXPECT_EQ(a[m][i].step, b[m][i].step);
      EXPECT_EQ(a[m][i].min, b[m][i].min);
      EXPECT_EQ(a[m][i].median, b[m][i].median);
      EXPECT_EQ(a[m][i].max, b[m][i].max);
      EXPECT_EQ(a[m][i].min_rank, b[m][i].min_rank);
      EXPECT_EQ(a[m][i].max_rank, b[m][i].max_rank);
      EXPECT_EQ(a[m][i].ranks, b[m][i].ranks);
    }
  }
}

std::vector<std::vector<RankBand>> bands_of(Store& store, std::int64_t id, BandSource source) {
  StepBandOptions options;
  options.source = source;
  return load_step_bands(store, id, all_metrics(), options);
}

// Stored bands that were not made of the rows their step has now (none in a file the writer keeps).
std::int64_t stale_bands(SqliteDb& db) {
  return db.query_int("SELECT COUNT(*) FROM step_bands b JOIN step_stats s USING(session_id, step) "
                      "WHERE b.rows != s.ranks");
}

// Every row of step_bands as text.
std::vector<std::string> band_rows(SqliteDb& db) {
  Statement s(db, "SELECT * FROM step_bands ORDER BY session_id, metric, step");
  std::vector<std::string> out;
  while (s.step()) {
    std::string row;
    for (int i = 0; i < s.column_count(); ++i) row += (s.is_null(i) ? "NULL" : s.text(i)) + "|";
    out.push_back(row);
  }
  return out;
}

// A session of `ranks` ranks written commit by commit (a new writer halfway, as after a collector
// restart: it knows none of the steps), checked against the rows after every few commits.
class StoreBands : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { path_ = temp_path("store_bands_" + std::to_string(GetParam())); }
  void TearDown() override { remove_store(path_); }

  void write_checking_as_it_goes() {
    Store store = Store::open_or_create(path_);
    auto writer = std::make_unique<StoreWriter>(store);
    writer->write("uid", {testing::sample_run_start("bands", GetParam(), "{}")});
    const auto commits = commits_of(GetParam(), 35u + static_cast<unsigned>(GetParam()));
    const std::int64_t id = find_session(store, "uid");
    for (std::size_t c = 0; c < commits.size(); ++c) {
      writer->write("uid", commits[c]);
      if (c == commits.size() / 2) writer = std::make_unique<StoreWriter>(store);
      if (c % 5 != 0 && c + 1 != commits.size()) continue;
      SCOPED_TRACE("after commit " + std::to_string(c));
      expect_same_bands(bands_of(store, id, BandSource::kPreferStats), bands_of(store, id, BandSource::kRows),
                        "commit " + std::to_string(c));
      EXPECT_EQ(stale_bands(store.db()), 0);
    }
  }
  std::string path_;
};

TEST_P(StoreBands, TheStoredBandsAreTheBandsOfTheRowsWhileStepsArriveAndAfter) {
  write_checking_as_it_goes();
  Store store = Store::open(path_);
  const std::int64_t id = find_session(store, "uid");
  const auto from_rows = bands_of(store, id, BandSource::kRows);
  expect_same_bands(bands_of(store, id, BandSource::kPreferStats), from_rows, "done");
  // A band for every step and metric with a value: each of the 11 metrics but none at every step.
  EXPECT_EQ(store.db().query_int("SELECT COUNT(DISTINCT metric) FROM step_bands"), 11);
  const auto& loss = from_rows[0];
  if (GetParam() > 1) {
    EXPECT_EQ(loss.size(), static_cast<std::size_t>(kSteps - 1));  // step 5's are all infinite
  }
  const auto& lr = from_rows[1];
  EXPECT_EQ(lr[6].max, 2e-4);  // the re-sent row
}

TEST_P(StoreBands, WhatTheWriterKeepsEqualsWhatTheMigrationFills) {
  write_checking_as_it_goes();
  Store store = Store::open(path_);
  SqliteDb& db = store.db();
  const auto written = band_rows(db);
  ASSERT_FALSE(written.empty());
  db.exec("BEGIN");
  db.exec("DELETE FROM step_bands");
  fill_step_bands_from_rows(db);
  EXPECT_EQ(band_rows(db), written);
  db.exec("ROLLBACK");
}

INSTANTIATE_TEST_SUITE_P(OddAndEvenRanks, StoreBands, ::testing::Values(1, 7, 12, 33),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(StoreBandsReader, AMissingOrStaleBandIsReadFromTheRowsAndAFreshOneIsTrusted) {
  const auto path = temp_path("store_bands_stale");
  write_session(path, 8, 7);
  Store store = Store::open(path);
  const std::int64_t id = find_session(store, "uid");
  const auto from_rows = bands_of(store, id, BandSource::kRows);
  SqliteDb& db = store.db();
  db.exec("DELETE FROM step_bands WHERE step = 2");                                     // missing
  db.exec("UPDATE step_bands SET rows = rows - 1, median = -1 WHERE step = 3");         // made of other rows
  db.exec("UPDATE step_bands SET median = -1 WHERE step = 4 AND metric = 'step_time_ms'");  // trusted as it is
  const auto read = bands_of(store, id, BandSource::kPreferStats);
  const std::size_t step_time = 4;  // all_metrics()'s order
  ASSERT_EQ(metric_name(all_metrics()[step_time]), std::string("step_time_ms"));
  EXPECT_EQ(read[step_time][4].median, -1);  // the table is what the reader reads
  auto expected = from_rows;
  expected[step_time][4].median = -1;
  expect_same_bands(read, expected, "tampered");
  remove_store(path);
}

TEST(StoreBandsReader, ASchema11FileIsReadFromItsRowsReadOnlyAndUpgradedOnce) {
  const auto path = temp_path("store_bands_11");
  write_session(path, 7, 11);
  std::vector<std::string> written;
  {
    SqliteDb db(path, false, false);  // back to schema 11, as an older build left the file
    written = band_rows(db);
    db.exec("DROP TABLE step_bands");
    db.exec("PRAGMA user_version = 11");
  }
  std::vector<std::vector<RankBand>> from_rows;
  {
    StoreOpenOptions read_only;
    read_only.read_only = true;
    Store old = Store::open(path, read_only);
    EXPECT_EQ(old.schema_version(), 11);
    const std::int64_t id = find_session(old, "uid");
    from_rows = bands_of(old, id, BandSource::kRows);
    expect_same_bands(bands_of(old, id, BandSource::kPreferStats), from_rows, "schema 11, read-only");
  }
  Store upgraded = Store::open(path);
  ASSERT_EQ(upgraded.migrations_applied().size(), 1u);
  EXPECT_EQ(upgraded.schema_version(), kSchemaVersion);
  EXPECT_EQ(band_rows(upgraded.db()), written);
  expect_same_bands(bands_of(upgraded, find_session(upgraded, "uid"), BandSource::kPreferStats), from_rows, "upgraded");
  remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
