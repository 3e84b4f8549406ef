// The profiled window's summaries (schema 11, sessions/activity_stats.hpp): `show --profile` reads
// them instead of the rows, so on a synthetic window (NCCL kernels under compute, copies, empty
// records, two devices, batches out of order and across commits, a writer that starts over) the
// analyses from the summaries must print exactly what the analyses of the rows print; what the
// writer accumulates must equal what the migration computes from the rows; and check's kernel
// families must not change.
#include <algorithm>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/profile_analyses.hpp"
#include "profiler/profile_selection.hpp"
#include "sessions/activity_stats.hpp"
#include "sessions/regression_internal.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_schema.hpp"
#include "sessions/store_writer.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::profiler {
namespace {

using namespace sessions;

const char* const kActivityTables[] = {"activity_device_stats", "activity_name_stats", "activity_step_stats"};
const char* const kNames[] = {"gemm_128x128", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "elementwise",
                              "void ncclKernel_AllGather_RING", "layer_norm", "softmax"};

// One rank's window: per step and device, kernels on three streams (NCCL ones on stream 13,
// overlapping the others), a copy, and now and then an empty or reversed record; cut into batches
// that are shuffled, so a batch's rows land before, after and among rows already written.
std::vector<ActivityBatch> window_batches(int rank, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> length(1, 400), gap(0, 150), name(0, 5), odd(0, 30);
  std::vector<ActivityRecord> records;
  for (std::int64_t step = 0; step < 4; ++step)
    for (int device = 0; device < 2; ++device)
      for (std::int64_t stream : {7, 9, 13}) {
        std::int64_t t = 100000 * step + 777 * stream;
        for (int k = 0; k < 40; ++k) {
          ActivityRecord r;
          r.name = kNames[name(random)];
          const bool nccl = is_nccl_kernel_name(r.name);
          if (nccl != (stream == 13)) r.name = stream == 13 ? kNames[1] : kNames[0];
          if (stream == 9 && k % 5 == 0) r.kind = ActivityKind::kMemcpy, r.name = "HtoD", r.bytes = 4096;
          r.start_ns = t += gap(random);
          r.end_ns = t += length(random);
          if (odd(random) == 0) r.end_ns = r.start_ns - (k % 2);  // an empty or reversed record
          r.device = device;
          r.stream = stream;
          r.step = (step == 3 && k > 30) ? -1 : step;  // some records of no step
          records.push_back(r);
        }
      }
  std::shuffle(records.begin(), records.end(), random);  // no batch is in time order either
  std::vector<ActivityBatch> batches;
  for (std::size_t first = 0; first < records.size(); first += 37) {
    ActivityBatch b{rank, {}};
    b.records.assign(records.begin() + first, records.begin() + std::min(records.size(), first + 37));
    batches.push_back(std::move(b));
  }
  std::shuffle(batches.begin(), batches.end(), random);
  return batches;
}

void write_session(Store& store, const std::string& uid, std::uint32_t seed) {
  auto writer = std::make_unique<StoreWriter>(store);
  RunStart start;
  start.name = uid;
  start.world_size = 3;
  for (int r = 0; r < 3; ++r) start.ranks.push_back({r, r, "node-a", 100 + r, "cuda:" + std::to_string(r)});
  writer->write(uid, {start});
  std::vector<Event> steps;
  for (std::int64_t step = 0; step < 4; ++step)
    for (int r = 0; r < 3; ++r) {
      StepMetrics m;
      m.rank = r;
      m.step = step;
      m.step_time_ms = 100 + step + r;
      steps.push_back(m);
      steps.push_back(TimerBreakdown{r, step, {{"forward", 30}, {"backward", 50.0 + r}, {"step", 10}}});
      steps.push_back(CommRecord{r, step, "all_reduce", 1 << 20, 4000.0 + r, 1, 1, 3});
    }
  writer->write(uid, steps);
  for (int rank : {0, 1}) {  // rank 2 has no window: its overlap comes from the timers
    const auto batches = window_batches(rank, seed + static_cast<std::uint32_t>(rank));
    for (std::size_t i = 0; i < batches.size(); i += 3) {  // up to three batches a commit
      std::vector<Event> commit(batches.begin() + i, batches.begin() + std::min(batches.size(), i + 3));
      writer->write(uid, commit);
      if (i == 30) writer = std::make_unique<StoreWriter>(store);  // a writer that starts over
    }
  }
}

std::string shown(const ProfileAnalyses& a) {
  AnalysisOptions options;
  options.top_kernels = 0;
  return format_profile_analyses(a, options) + to_json(a).dump(1);
}

std::vector<std::string> rows_of(SqliteDb& db, const std::string& table) {
  Statement s(db, ("SELECT * FROM " + table + " ORDER BY 1, 2, 3, 4").c_str());
  std::vector<std::string> out;
  while (s.step()) {
    std::string row;
    for (int i = 0; i < s.column_count(); ++i) row += (s.is_null(i) ? "NULL" : std::to_string(s.int64(i))) + "|";
    out.push_back(row);
  }
  return out;
}

std::string contributors_text(Store& store) {
  bool profiled = false;
  std::vector<std::string> notes;
  MetricVerdict step;
  step.metric = "step_time";
  step.baseline = 100;
  step.candidate = 110;
  const std::vector<MetricVerdict> metrics{step};
  std::string text;
  for (const auto& c : detail::regression_contributors(store, {1}, {2}, metrics, 0, profiled, notes)) {
    char line[200];
    std::snprintf(line, sizeof line, "%s %s %.17g %.17g\n", c.kind.c_str(), c.name.c_str(), c.baseline_ms,
                  c.candidate_ms);
    text += line;
  }
  return text + (profiled ? "profiled" : "not profiled");
}

class ProfileSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("window.db");
    Store store = Store::open_or_create(path_);
    write_session(store, "uid-a", 11);
    write_session(store, "uid-b", 29);
  }
  // Back to schema 10, as an older build left the file.
  void downgrade() {
    SqliteDb db(path_, false, false);
    for (const char* table : kActivityTables) db.exec(std::string("DROP TABLE ") + table);
    db.exec("DROP TABLE step_bands");  // schema 12's
    db.exec("PRAGMA user_version = 10");
  }
  test::TempDir dir_;
  std::string path_;
};

TEST_F(ProfileSummaryTest, TheSummariesPrintWhatTheRowsPrint) {
  Store store = Store::open(path_);
  for (std::int64_t id : {1, 2}) {
    const auto from_rows = analyze_records(load_profile_records(store, id));
    const auto from_summaries = analyze_records(load_profile_summary(store, id));
    ASSERT_TRUE(from_summaries.has_profiled_window);
    ASSERT_EQ(from_summaries.gpu_idle.size(), 4u);  // ranks 0 and 1, devices 0 and 1
    EXPECT_GT(from_summaries.comm_overlap[0].hidden_ms.value_or(0), 0);
    EXPECT_EQ(from_summaries.comm_overlap[2].method, OverlapMethod::kTimers);
    EXPECT_EQ(shown(from_summaries), shown(from_rows)) << "session " << id;
  }
}

TEST_F(ProfileSummaryTest, WhatTheWriterAccumulatesEqualsTheSummariesOfTheRows) {
  Store store = Store::open(path_);
  SqliteDb& db = store.db();
  std::vector<std::vector<std::string>> written;
  for (const char* table : kActivityTables) written.push_back(rows_of(db, table));
  ASSERT_EQ(written[0].size(), 8u);  // two sessions x two ranks x two devices
  db.exec("BEGIN");
  for (const char* table : kActivityTables) db.exec(std::string("DELETE FROM ") + table);
  fill_activity_stats_from_rows(db);
  for (std::size_t t = 0; t < std::size(kActivityTables); ++t)
    EXPECT_EQ(rows_of(db, kActivityTables[t]), written[t]) << kActivityTables[t];
  db.exec("ROLLBACK");
}

TEST_F(ProfileSummaryTest, ASchema10FileIsUpgradedOnceAndReadOnlyItIsReadFromItsRows) {
  std::string expected[2], expected_check;
  {
    Store store = Store::open(path_);
    for (std::int64_t id : {1, 2}) expected[id - 1] = shown(analyze_records(load_profile_summary(store, id)));
    expected_check = contributors_text(store);
  }
  EXPECT_NE(expected_check.find("kernel gemm "), std::string::npos) << expected_check;
  downgrade();
  StoreOpenOptions read_only;
  read_only.read_only = true;
  {
    Store old = Store::open(path_, read_only);
    EXPECT_EQ(old.schema_version(), 10);
    for (std::int64_t id : {1, 2}) EXPECT_EQ(shown(analyze_records(load_profile_summary(old, id))), expected[id - 1]);
    EXPECT_EQ(contributors_text(old), expected_check);
  }
  Store upgraded = Store::open(path_);
  ASSERT_EQ(upgraded.migrations_applied().size(), 2u);  // 10 -> 11 -> 12
  EXPECT_EQ(upgraded.schema_version(), kSchemaVersion);
  for (std::int64_t id : {1, 2}) EXPECT_EQ(shown(analyze_records(load_profile_summary(upgraded, id))), expected[id - 1]);
  EXPECT_EQ(contributors_text(upgraded), expected_check);
}

}  // namespace
}  // namespace shardscope::profiler
