// The pre-aggregates of schema 10 (sessions/store_stats.hpp): what the writer accumulates batch by
// batch must equal what the migration computes from the rows, through re-sent steps and timers,
// a rank's records of one step split across commits, and a writer that starts over mid-run.
#include "sessions/store_stats.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_schema.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using testing::remove_store;
using testing::temp_path;

// Every row of `table` as text, numbers to 12 significant digits (sums in another order differ
// in the last bits).
std::vector<std::string> rows_of(SqliteDb& db, const std::string& table) {
  Statement s(db, ("SELECT * FROM " + table + " ORDER BY 1, 2, 3").c_str());
  std::vector<std::string> out;
  while (s.step()) {
    std::string row;
    for (int i = 0; i < s.column_count(); ++i) {
      char cell[40] = "NULL";
      if (s.column_kind(i) == Statement::ColumnKind::kText) row += s.text(i) + "|";
      else if (s.column_kind(i) != Statement::ColumnKind::kNull) std::snprintf(cell, sizeof cell, "%.12g", s.real(i));
      if (s.column_kind(i) != Statement::ColumnKind::kText) row += std::string(cell) + "|";
    }
    out.push_back(row);
  }
  return out;
}

const char* const kStatsTables[] = {"step_stats", "rank_stats", "timer_stats", "comm_stats"};

StepMetrics step_of(int rank, std::int64_t step, double scale) {
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.wall_time = 1000 + step + rank * 0.01;
  m.step_time_ms = (100 + step + 3 * rank) * scale;
  if (rank % 2 == 0) m.loss = (10.0 - 0.1 * static_cast<double>(step)) * scale;
  m.samples_per_s = 8 * scale;
  m.tflops = 40 + rank;
  m.skipped = step == 4 && rank == 1;
  if (rank != 3) m.mem_peak_bytes = static_cast<std::int64_t>((rank + 1) * 1e9 * scale);
  else m.mem_allocated_bytes = static_cast<std::int64_t>(2e9 * scale);
  m.mem_reserved_bytes = static_cast<std::int64_t>(3e9 * scale);
  return m;
}

// One rank's step: timers, two all_gathers and one all_reduce, then its metrics.
std::vector<Event> rank_step(int rank, std::int64_t step, double scale) {
  std::vector<Event> out;
  out.push_back(TimerBreakdown{rank, step, {{"forward", 30 * scale + rank}, {"backward", 60 * scale}}});
  for (int k = 0; k < 2; ++k)
    out.push_back(CommRecord{rank, step, "all_gather", 1 << 20, 500.0 + 100 * rank + k, 2.0, 1.5, 4});
  out.push_back(CommRecord{rank, step, "all_reduce", 4 << 20, 2000.0 * scale, rank == 2 ? NAN : 2.1, 3.0, 4});
  out.push_back(step_of(rank, step, scale));
  return out;
}

void write_run(const std::string& path) {
  Store store = Store::open_or_create(path);
  auto writer = std::make_unique<StoreWriter>(store);
  writer->write("uid", {testing::sample_run_start("stats", 4, "{}")});
  for (std::int64_t step = 0; step < 12; ++step) {
    std::vector<Event> first, second;
    for (int rank = 0; rank < 4; ++rank) {
      auto events = rank_step(rank, step, 1.0);
      // rank 1's second all_gather of each step lands in the next commit
      auto& into = rank == 1 ? second : first;
      first.insert(first.end(), events.begin(), events.begin() + (rank == 1 ? 2 : 0));
      into.insert(into.end(), events.begin() + (rank == 1 ? 2 : 0), events.end());
    }
    writer->write("uid", first);
    writer->write("uid", second);
    if (step == 6) writer = std::make_unique<StoreWriter>(store);  // a writer that starts over mid-run
  }
  // A resumed rank 2 re-sends steps 8-10 with other values (lower peak memory, faster steps).
  for (std::int64_t step = 8; step <= 10; ++step) writer->write("uid", rank_step(2, step, 0.5));
}

TEST(StoreStats, WhatTheWriterAccumulatesEqualsTheAggregatesOfTheRows) {
  const auto path = temp_path("stats");
  write_run(path);
  Store store = Store::open(path);
  SqliteDb& db = store.db();
  std::vector<std::vector<std::string>> written;
  for (const char* table : kStatsTables) written.push_back(rows_of(db, table));
  ASSERT_EQ(written[0].size(), 12u);  // a row per step
  ASSERT_EQ(written[1].size(), 4u);   // a row per rank
  db.exec("BEGIN");
  for (const char* table : kStatsTables) db.exec(std::string("DELETE FROM ") + table);
  fill_stats_from_rows(db);
  for (std::size_t t = 0; t < std::size(kStatsTables); ++t)
    EXPECT_EQ(rows_of(db, kStatsTables[t]), written[t]) << kStatsTables[t];
  db.exec("ROLLBACK");
  remove_store(path);
}

TEST(StoreStats, ASchema9FileIsUpgradedOnceAndReadOnlyItIsReadFromItsRows) {
  const auto path = temp_path("stats9");
  write_run(path);
  Store current = Store::open(path);
  const auto id = list_sessions(current).at(0).id;
  const SessionSummary expected = summarize_session(current, id);
  const auto expected_curve = load_curve(current, id, Metric::kLoss);
  {
    SqliteDb db(path, false, false);  // back to schema 9, as an older build left the file
    for (const char* table : kStatsTables) db.exec(std::string("DROP TABLE ") + table);
    for (const char* table : {"activity_device_stats", "activity_name_stats", "activity_step_stats", "step_bands"})
      db.exec(std::string("DROP TABLE ") + table);  // schema 11's and 12's
    db.exec("PRAGMA user_version = 9");
  }
  StoreOpenOptions read_only;
  read_only.read_only = true;
  Store old = Store::open(path, read_only);
  EXPECT_EQ(old.schema_version(), 9);
  const SessionSummary from_rows = summarize_session(old, id);
  EXPECT_DOUBLE_EQ(*from_rows.median_step_ms, *expected.median_step_ms);
  EXPECT_DOUBLE_EQ(*from_rows.final_loss, *expected.final_loss);
  EXPECT_DOUBLE_EQ(*from_rows.comm_time_s, *expected.comm_time_s);
  ASSERT_EQ(from_rows.memory.size(), expected.memory.size());
  EXPECT_EQ(from_rows.memory[2].peak_bytes, expected.memory[2].peak_bytes);  // the re-sent, lower peak
  ASSERT_EQ(from_rows.timers.size(), 2u);
  EXPECT_DOUBLE_EQ(from_rows.timers[0].median_ms, expected.timers[0].median_ms);
  EXPECT_EQ(load_curve(old, id, Metric::kLoss).size(), expected_curve.size());
  Store upgraded = Store::open(path);
  ASSERT_EQ(upgraded.migrations_applied().size(), 3u);  // 9 -> 10 -> 11 -> 12
  EXPECT_EQ(upgraded.schema_version(), kSchemaVersion);
  EXPECT_DOUBLE_EQ(*summarize_session(upgraded, id).p90_step_ms, *expected.p90_step_ms);
  remove_store(path);
}

TEST(StoreStats, TheSummaryOfAResentStepCountsItsLatestValues) {
  const auto path = temp_path("resent");
  write_run(path);
  Store store = Store::open(path);
  const SessionSummary s = summarize_session(store, list_sessions(store).at(0).id);
  // rank 2's steps 8-10 were re-sent at half their peak: its other steps still hold 3e9.
  ASSERT_EQ(s.memory.size(), 4u);
  EXPECT_EQ(s.memory[2].peak_bytes, 3000000000);
  EXPECT_EQ(s.steps, 12);
  EXPECT_EQ(s.skipped_steps, 1);
  remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
