#include "sessions/session_compare.hpp"

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

TEST(FlattenJson, PathsAndValuesAreReadable) {
  const auto leaves = flatten_json_text(R"({"zero_optimization": {"stage": 3, "offload": {"device": "cpu"}},
                                           "gpus": [{"name": "H200"}], "fp16": {}, "flag": true})");
  const std::vector<std::pair<std::string, std::string>> expected{
      {"flag", "true"}, {"fp16", "{}"}, {"gpus[0].name", "H200"},
      {"zero_optimization.offload.device", "cpu"}, {"zero_optimization.stage", "3"}};
  EXPECT_EQ(leaves, expected);
}

TEST(DiffDocuments, KeepsDifferingAndMissingPaths) {
  const auto rows = diff_documents({{{"a", "1"}, {"b", "2"}}, {{"a", "1"}, {"b", "3"}, {"c", "x"}}}, true);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].path, "b");
  EXPECT_EQ(rows[1].path, "c");
  EXPECT_FALSE(rows[1].values[0].has_value());
  EXPECT_EQ(diff_documents({{{"a", "1"}}, {{"a", "1"}}}, false).size(), 1u);
}

TEST(AlignCurves, UnionOfStepsWithGaps) {
  const auto curve = align_curves("loss", {{{0, 1, 0}, {2, 3, 0}}, {{1, 5, 0}, {2, 6, 0}}}, {});
  EXPECT_EQ(curve.steps, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(curve.values[0][1], std::nullopt);
  EXPECT_EQ(curve.values[1][1], 5);
  EXPECT_EQ(curve.smoothed[0][2], 3);
}

TEST(CompareSessions, DeltasAndDiffsAgainstTheBaseline) {
  const auto path = testing::temp_path("compare");
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  std::vector<Event> a{testing::sample_run_start("a", 2, R"({"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})")};
  for (auto& e : testing::sample_steps(2, 10)) a.push_back(e);
  writer.write("uid-a-000000", a);
  RunStart b_start = testing::sample_run_start("b", 2, R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}})");
  b_start.environment.versions.nccl = "2.28.9";
  std::vector<Event> b{b_start};
  for (auto& e : testing::sample_steps(2, 6)) {
    if (auto* m = std::get_if<StepMetrics>(&e); m && m->step_time_ms) *m->step_time_ms *= 2;
    b.push_back(e);
  }
  writer.write("uid-b-000000", b);

  CompareOptions compare;
  compare.metrics = {Metric::kLoss, Metric::kStepTime};
  compare.smoothing.kind = SmoothingKind::kEma;
  const auto c = compare_sessions(store, {1, 2}, compare);
  ASSERT_EQ(c.sessions.size(), 2u);
  const auto& loss = c.curves[0];
  EXPECT_EQ(loss.metric, "loss");
  EXPECT_EQ(loss.steps.size(), 10u);
  EXPECT_FALSE(loss.values[1][8].has_value());  // b stopped at step 5
  EXPECT_EQ(c.curves.back().metric, "timer:forward");
  const auto& median = c.summary[0];
  EXPECT_EQ(median.field, "median_step_ms");
  // a: slowest ranks 100..118, median 109. b: 2 * (100..110 step 2) = 200..220, median 210.
  EXPECT_DOUBLE_EQ(*median.values[0], 109);
  EXPECT_DOUBLE_EQ(*median.values[1], 210);
  EXPECT_DOUBLE_EQ(*median.delta[1], 101);
  EXPECT_NEAR(*median.delta_percent[1], 100.0 * 101 / 109, 1e-9);
  ASSERT_EQ(c.config_diff.size(), 1u);
  EXPECT_EQ(c.config_diff[0].path, "zero_optimization.stage");
  EXPECT_EQ(*c.config_diff[0].values[1], "3");
  ASSERT_EQ(c.environment_diff.size(), 1u);
  EXPECT_EQ(c.environment_diff[0].path, "versions.nccl");

  EXPECT_THROW(compare_sessions(store, {1}), SessionsError);
  EXPECT_THROW(compare_sessions(store, {1, 1}), SessionsError);
  EXPECT_THROW(compare_sessions(store, {1, 2, 3, 4, 5, 6, 7, 8, 9}), SessionsError);
  EXPECT_THROW(compare_sessions(store, {1, 99}), StoreError);
  testing::remove_store(path);
}

const DiffRow* find_row(const std::vector<DiffRow>& rows, const std::string& path) {
  for (const auto& row : rows)
    if (row.path == path) return &row;
  return nullptr;
}

TEST(CompareSessions, HostsClockOffsetsAreEnvironmentRows) {
  const auto path = testing::temp_path("compare_clocks");
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  // node-a is the collector's host; -0.01 ms rounds to the same "+0.0 ms" as 0.
  writer.write("uid-clock-a", testing::two_host_run("a", {0.0, 0.0002}, {0.0123, 0.0002}));
  writer.write("uid-clock-b", testing::two_host_run("b", {-0.00001, 0.0002}, {-0.0456, std::nullopt}));
  writer.write("uid-clock-c", testing::two_host_run("c", {0.0, 0.0002}, {}));  // node-b never probed

  const auto c = compare_sessions(store, {1, 2, 3});
  const DiffRow* offset = find_row(c.environment_diff, "run.hosts[1].clock_offset");
  ASSERT_NE(offset, nullptr);
  EXPECT_EQ(offset->values[0], "+12.3 ms (\u00b1 0.2 ms)");
  EXPECT_EQ(offset->values[1], "-45.6 ms");  // no uncertainty recorded
  EXPECT_EQ(offset->values[2], std::nullopt);
  EXPECT_TRUE(offset->differs);
  EXPECT_EQ(find_row(c.environment_diff, "run.hosts[0].clock_offset"), nullptr) << "equal offsets are no difference";
  EXPECT_EQ(find_row(c.environment_diff, "run.hosts[1].name"), nullptr);

  CompareOptions all;
  all.diff_only = false;
  const auto every = compare_sessions(store, {1, 2}, all);
  const DiffRow* same = find_row(every.environment_diff, "run.hosts[0].clock_offset");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->values[1], "+0.0 ms (\u00b1 0.2 ms)");
  EXPECT_FALSE(same->differs);
  EXPECT_EQ(*find_row(every.environment_diff, "run.hosts[1].name")->values[0], "node-b");
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions

namespace shardscope::sessions {
namespace {

TEST(CompareSessions, DifferentDeepSpeedReleasesNameWhatTheyImply) {
  const auto path = testing::temp_path("compare_releases");
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  auto watched = [](const std::string& name, const std::string& release) {
    RunStart start = testing::sample_run_start(name, 1, R"({"bf16": {"enabled": true}, "disable_python_gc": true})");
    start.environment.versions.deepspeed = release;
    return std::vector<Event>{start, SessionOrigin{"deepspeed-watch", "{}"}};
  };
  writer.write("uid-ds-0197", watched("ds-0197", "0.19.7"));
  writer.write("uid-ds-0198", watched("ds-0198", "0.19.8"));
  writer.write("uid-ds-0198b", watched("ds-0198b", "0.19.8"));
  const auto c = compare_sessions(store, {1, 2});
  ASSERT_GE(c.deepspeed_release.size(), 3u);
  EXPECT_EQ(c.deepspeed_release[0].path, "versions.deepspeed");
  EXPECT_EQ(c.deepspeed_release[0].values[0], "0.19.7");
  EXPECT_EQ(c.deepspeed_release[0].values[1], "0.19.8");
  const ReleaseChange* keep = nullptr;
  const ReleaseChange* gc = nullptr;
  for (const auto& r : c.deepspeed_release) {
    if (r.path == "data_types.keep_in_fp32_modules") keep = &r;
    if (r.path == "disable_python_gc") gc = &r;
  }
  ASSERT_NE(keep, nullptr);
  EXPECT_EQ(keep->values[0], "(no such key) in 0.19.7");
  EXPECT_EQ(keep->values[1], "auto (default of 0.19.8)");
  EXPECT_NE(keep->note.find("added this key in 0.19.8"), std::string::npos) << keep->note;
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->values[0], "true (ignored: no such key in 0.19.7)");
  EXPECT_EQ(gc->values[1], "true");  // set in the config: the value it ran with
  EXPECT_TRUE(compare_sessions(store, {2, 3}).deepspeed_release.empty()) << "one release: nothing to say";
  testing::remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
