// The importer end to end without DeepSpeed: the real DeepSpeed 0.19.7 log of the fixture, a
// csv_monitor folder and a trace written here, into a store; compared with a native session.
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/import/deepspeed_import.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/series_reader.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;
const std::string kLog = std::string(SHARDSCOPE_TEST_DATA_DIR) + "/deepspeed_0.19.7_zero2_cpu.log";

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(DeepSpeedImport, ALogAloneGivesStepsTimersCommsFactsAndItsConfig) {
  const auto db = testing::temp_path("import_log");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.log_files = {kLog};
  const auto result = import_deepspeed_run(store, sources);
  EXPECT_EQ(result.steps, 6u);
  EXPECT_EQ(result.comm_summaries, 7u);
  EXPECT_EQ(result.log_lines, 289u);
  const auto detail = load_session(store, result.session_id);
  EXPECT_EQ(detail.info.origin, "deepspeed-import");
  EXPECT_EQ(detail.info.status, "completed");  // both ranks "exit successfully"
  EXPECT_EQ(detail.info.world_size, 2);
  ASSERT_EQ(detail.ranks.size(), 2u);
  EXPECT_EQ(detail.ranks[1].info.pid, 25985);
  EXPECT_EQ(detail.ranks[1].exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(detail.config_json)["zero_optimization"]["stage"], 2);  // the logged config, resolved
  EXPECT_EQ(nlohmann::json::parse(detail.origin_json)["logs"][0], fs::absolute(kLog).lexically_normal().string());
  const auto summary = summarize_session(store, result.session_id);
  EXPECT_EQ(summary.steps, 6);
  ASSERT_FALSE(summary.comm_ops.empty());
  EXPECT_EQ(summary.comm_ops[0].op, "all_reduce");  // the most time
  EXPECT_EQ(summary.comm_ops[0].count, 12);
  EXPECT_NEAR(summary.comm_time_s.value(), (15.26 + 9.13 + 1.00 + 1070.68 + 1042.59 + 746.70 + 2.35) / 1e3, 1e-9);
  EXPECT_EQ(load_series_curve(store, result.session_id, "flops_profiler/params_per_gpu").at(0).step, 3);
  testing::remove_store(db);
}

TEST(DeepSpeedImport, MonitorValuesAreExactAndStepsFollowTrainBatchSize) {
  const auto dir = fs::path(testing::temp_path("import_csv")) / "job";
  write(dir / "Train_Samples_lr.csv", "step,lr\r\n8,0.0\r\n16,0.0006309297535714573\r\n24,0.001\r\n");
  write(dir / "Train_Samples_elapsed_time_ms_forward.csv", "step,elapsed_time_ms_forward\r\n8,0.6923675537109375\r\n");
  const auto db = testing::temp_path("import_csv_db");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.csv_monitor_dir = dir.string();
  sources.log_files = {kLog};  // its train_batch_size (8) sets the step of every sample count
  const auto result = import_deepspeed_run(store, sources);
  EXPECT_EQ(result.samples_per_step, 8);
  // DeepSpeed wrote each rate after its scheduler stepped: the one the next step ran with.
  const auto lr = load_curve(store, result.session_id, Metric::kLr);
  ASSERT_GE(lr.size(), 3u);
  EXPECT_EQ(lr[0].step, 2);
  EXPECT_EQ(lr[0].value, 0.0);
  EXPECT_EQ(lr[1].step, 3);
  EXPECT_EQ(lr[1].value, 0.0006309297535714573);
  EXPECT_LE(lr.back().step, 6);  // the log's last step is 6: the rate written after it is not a step
  const auto forward = load_timer_curve(store, result.session_id, "forward");
  EXPECT_EQ(forward.at(0).value, 0.6923675537109375);  // the csv's exact value, not the log's 0.68
  EXPECT_EQ(load_session(store, result.session_id).info.name, "job");
  testing::remove_store(db);
}

TEST(DeepSpeedImport, ImportedAndNativeSessionsCompare) {
  const auto db = testing::temp_path("import_compare");
  Store store = Store::open_or_create(db);
  StoreWriter writer(store);
  std::vector<Event> native{testing::sample_run_start("native", 2, R"({"zero_optimization": {"stage": 3}})")};
  for (auto& e : testing::sample_steps(2, 8)) native.push_back(e);
  writer.write("native-uid", native);
  DeepSpeedImportSources sources;
  sources.log_files = {kLog};
  const auto imported = import_deepspeed_run(store, sources);
  const auto comparison = compare_sessions(store, {find_session(store, "native-uid"), imported.session_id});
  bool origin_row = false, stage_row = false, series_curve = false;
  for (const auto& row : comparison.environment_diff)
    origin_row |= row.path == "run.origin" && row.values[0] == "shardscope" && row.values[1] == "deepspeed-import";
  for (const auto& row : comparison.config_diff) stage_row |= row.path == "zero_optimization.stage" && row.differs;
  for (const auto& curve : comparison.curves) series_curve |= curve.metric == "series:flops_profiler/world_size";
  EXPECT_TRUE(origin_row);
  EXPECT_TRUE(stage_row);
  EXPECT_TRUE(series_curve);
  testing::remove_store(db);
}

// A CPU run's trace of rank 0 as torch 2.11 writes it (record_shapes=True): ProfilerStep#N windows
// of 40, 30 and 20 ms (and #6 of 25 ms when `late_step`), operators with shapes in the first, and
// a fwdbwd flow from aten::t to TBackward0.
std::string cpu_trace(bool late_step) {
  std::string events = R"(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 9, "tid": 9, "ts": 1000.0, "dur": 40000.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 9, "tid": 9, "ts": 1001.0, "dur": 100.0,
     "args": {"External id": 5, "Sequence number": 12, "Fwd thread id": 0, "Input Dims": [[8, 16], [32, 16], [32]]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 9, "tid": 9, "ts": 1001.0, "dur": 20.0,
     "args": {"External id": 6, "Sequence number": 12, "Fwd thread id": 0, "Input Dims": [[32, 16]]}},
    {"ph": "s", "id": 6, "pid": 9, "tid": 9, "ts": 1001.0, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 9, "tid": 9, "ts": 2000.0, "dur": 50.0,
     "args": {"External id": 21, "Sequence number": 12, "Fwd thread id": 1, "Input Dims": [[16, 32]]}},
    {"ph": "f", "id": 6, "pid": 9, "tid": 9, "ts": 2000.0, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": 41000.0, "dur": 30000.0},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 9, "tid": 9, "ts": 71000.0, "dur": 20000.0})";
  if (late_step)
    events += R"(,
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#6", "pid": 9, "tid": 9, "ts": 200000.0, "dur": 25000.0})";
  return R"({"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2}, "traceEvents": [)" + events +
         R"(], "baseTimeNanoseconds": 1790000000000000000})";
}

const StepMetrics* step_row(const std::vector<StepMetrics>& rows, std::int64_t step, int rank) {
  for (const auto& r : rows)
    if (r.step == step && r.rank == rank) return &r;
  return nullptr;
}

TEST(DeepSpeedImport, ATraceGivesStepTimesCpuOperatorsAndTheirLinks) {
  const auto trace = fs::path(testing::temp_path("import_trace_dir")) / "rank0.json";
  write(trace, cpu_trace(false));
  const auto db = testing::temp_path("import_trace");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.traces = {{std::nullopt, trace.string()}};
  const auto result = import_deepspeed_run(store, sources);
  EXPECT_EQ(result.ranges, 6u);
  EXPECT_EQ(result.cpu_ops, 3u);
  EXPECT_EQ(result.forward_backward_links, 1u);
  EXPECT_EQ(result.trace_step_times, 3u);
  EXPECT_EQ(result.steps, 3u);
  EXPECT_NE(import_result_text(result).find("6 ranges (3 CPU operators, 1 forward/backward links), 3 step times"),
            std::string::npos) << import_result_text(result);
  const auto steps = load_steps(store, result.session_id);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step, 1);  // ProfilerStep#0 is DeepSpeed's step 1
  EXPECT_EQ(steps[0].rank, 0);
  EXPECT_EQ(steps[0].step_time_ms, 40.0);
  EXPECT_DOUBLE_EQ(steps[0].wall_time, (1790000000000000000.0 + 41000000.0) / 1e9);  // the window's end
  EXPECT_EQ(steps[1].step_time_ms, 30.0);
  EXPECT_EQ(steps[2].step_time_ms, 20.0);
  const auto ranges = load_nvtx(store, result.session_id, 0);
  ASSERT_EQ(ranges.size(), 6u);
  std::map<std::string, NvtxRange> by_name;
  for (const auto& r : ranges) by_name[r.name] = r;
  EXPECT_EQ(by_name["aten::linear"].domain, kCpuOpDomain);
  EXPECT_EQ(by_name["aten::linear"].shapes, "[[8,16],[32,16],[32]]");
  EXPECT_EQ(by_name["aten::linear"].sequence_number, 12);
  EXPECT_EQ(by_name["aten::linear"].external_id, 5);
  EXPECT_EQ(by_name["aten::linear"].step, 1);
  EXPECT_EQ(by_name["TBackward0"].forward_op_id, 6);  // aten::t's external id, through the store
  EXPECT_EQ(by_name["TBackward0"].forward_thread_id, 1);
  EXPECT_FALSE(by_name["ProfilerStep#1"].has_op_details());
  testing::remove_store(db);
}

TEST(DeepSpeedImport, TheLogsStepTimesWinOverProfilerStepWindows) {
  const auto trace = fs::path(testing::temp_path("import_trace_log_dir")) / "rank0.json";
  write(trace, cpu_trace(true));
  const auto db = testing::temp_path("import_trace_log");
  Store store = Store::open_or_create(db);
  DeepSpeedImportSources sources;
  sources.log_files = {kLog};
  const auto log_only = load_steps(store, import_deepspeed_run(store, sources).session_id);
  sources.traces = {{0, trace.string()}};
  const auto both = load_steps(store, import_deepspeed_run(store, sources).session_id);
  int kept = 0;
  for (const auto& row : log_only) {
    if (!row.step_time_ms) continue;
    const StepMetrics* same = step_row(both, row.step, row.rank);
    ASSERT_NE(same, nullptr);
    EXPECT_EQ(same->step_time_ms, row.step_time_ms) << "step " << row.step << " rank " << row.rank;
    kept += row.rank == 0 && row.step <= 3;
  }
  EXPECT_GT(kept, 0);  // the log timed rank 0's steps 1-3 too: the windows were not used there
  const StepMetrics* late = step_row(both, 7, 0);
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->step_time_ms, 25.0);  // no other source timed step 7: the window fills it
  testing::remove_store(db);
}

TEST(DeepSpeedImport, CancellingWritesNothingAndBadInputNamesTheFile) {
  const auto db = testing::temp_path("import_cancel");
  Store store = Store::open_or_create(db);
  std::atomic<bool> cancel{true};
  DeepSpeedImportOptions options;
  options.cancel = &cancel;
  std::vector<std::string> stages;
  options.progress = [&](const ImportProgress& p) { stages.push_back(p.stage); };
  DeepSpeedImportSources sources;
  sources.log_files = {kLog};
  EXPECT_THROW(import_deepspeed_run(store, sources, options), ImportCancelled);
  EXPECT_TRUE(list_sessions(store).empty());
  EXPECT_TRUE(stages.empty());
  cancel = false;
  import_deepspeed_run(store, sources, options);
  EXPECT_EQ(stages.front(), "log");
  EXPECT_EQ(stages.back(), "writing");
  sources.csv_monitor_dir = "/nonexistent/csv";
  try {
    import_deepspeed_run(store, sources);
    FAIL();
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/csv: not a folder"), std::string::npos);
  }
  EXPECT_EQ(list_sessions(store).size(), 1u);
  testing::remove_store(db);
}

TEST(DeepSpeedImport, AFailedImportIntoANewFileLeavesNoFile) {
  const auto db = testing::temp_path("import_new_fails");
  DeepSpeedImportSources sources;
  sources.csv_monitor_dir = "/nonexistent/csv";
  EXPECT_THROW(import_deepspeed_run_into(db, sources), ImportError);
  EXPECT_FALSE(fs::exists(db));
  EXPECT_FALSE(fs::exists(db + "-wal"));
  sources = {};
  sources.log_files = {kLog};
  EXPECT_EQ(import_deepspeed_run_into(db, sources).session_id, 1);  // a good one creates it
  sources.csv_monitor_dir = "/nonexistent/csv";
  EXPECT_THROW(import_deepspeed_run_into(db, sources), ImportError);
  Store store = Store::open_or_create(db);  // a file that was there stays, with what it held
  EXPECT_EQ(list_sessions(store).size(), 1u);
  testing::remove_store(db);
}

// Issue 31: a failed import deleted the user's (dangling) --db link.
TEST(DeepSpeedImport, AFailedImportNeverRemovesTheLinkItWasGiven) {
  const auto link = testing::temp_path("import_link");
  fs::remove(link);
  fs::create_symlink("/nonexistent/sessions.db", link);
  DeepSpeedImportSources sources;
  sources.log_files = {kLog};
  EXPECT_THROW(import_deepspeed_run_into(link, sources), StoreError);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  fs::remove(link);
}

}  // namespace
}  // namespace shardscope::sessions
