// check_regression and metric_trend on synthetic sessions in a real store: verdicts both ways,
// the contributors of an injected kernel slowdown, the version and default-flip diff, and
// unusable input refused.
#include <algorithm>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/regression_check.hpp"
#include "sessions/regression_trend.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/regression_fixtures.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using testing::SyntheticRun;
using testing::write_synthetic_run;

class RegressionCheck : public ::testing::Test {
 protected:
  void SetUp() override { db_ = testing::temp_path("regression") + ".db"; }
  void TearDown() override { testing::remove_store(db_); }
  Store store() { return Store::open_or_create(db_); }
  std::string db_;
};

const MetricVerdict& metric(const RegressionReport& r, const std::string& name) {
  const auto it = std::find_if(r.metrics.begin(), r.metrics.end(), [&](const MetricVerdict& m) { return m.metric == name; });
  if (it == r.metrics.end()) throw std::runtime_error("no metric " + name);
  return *it;
}

const ChangedValue* change(const RegressionReport& r, const std::string& path) {
  for (const auto& c : r.changes)
    if (c.path == path) return &c;
  return nullptr;
}

SyntheticRun run(const std::string& name, std::uint64_t seed) {
  SyntheticRun r;
  r.name = name, r.seed = seed, r.profiled = true;
  return r;
}

bool has_note(const RegressionReport& r, const std::string& start) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.rfind(start, 0) == 0; });
}

// One repeat of each side ran on a busy host (1.6x slower): the interval spans far past the
// threshold both ways, which the report calls undecided rather than leaving "within noise" alone.
TEST_F(RegressionCheck, RunsThatDisagreeFarBeyondTheThresholdAreUndecided) {
  Store s = store();
  auto slow = [](SyntheticRun r) { return r.step_ms = 160, r; };
  const auto a1 = write_synthetic_run(s, run("base", 1)), a2 = write_synthetic_run(s, slow(run("base", 2)));
  const auto b1 = write_synthetic_run(s, slow(run("cand", 3))), b2 = write_synthetic_run(s, run("cand", 4));
  const RegressionReport r = check_regression(s, {a1, a2}, {b1, b2});
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(metric(r, "step_time").verdict, Verdict::kWithinNoise);
  EXPECT_TRUE(has_note(r, "step_time: undecided")) << ::testing::PrintToString(r.notes);
}

TEST_F(RegressionCheck, RepeatsOfOneRunAreWithinNoise) {
  Store s = store();
  const auto a1 = write_synthetic_run(s, run("base", 1)), a2 = write_synthetic_run(s, run("base", 2));
  const auto b1 = write_synthetic_run(s, run("cand", 3)), b2 = write_synthetic_run(s, run("cand", 4));
  const RegressionReport r = check_regression(s, {a1, a2}, {b1, b2});
  EXPECT_FALSE(r.failed);
  for (const auto& m : r.metrics) EXPECT_NE(m.verdict, Verdict::kRegression) << m.metric;
  const auto& step = metric(r, "step_time");
  EXPECT_LT(step.change.low, 0);
  EXPECT_GT(step.change.high, 0);
  EXPECT_EQ(r.warmup_steps, (std::vector<std::int64_t>{12, 12, 12, 12}));  // 10 % of 120 steps
  EXPECT_TRUE(r.profiled);
  EXPECT_TRUE(r.changes.empty()) << r.changes.front().path;  // repeats: same config, versions, flags
  EXPECT_FALSE(has_note(r, "step_time: undecided")) << ::testing::PrintToString(r.notes);
}

TEST_F(RegressionCheck, AKernelSlowdownIsARegressionNamedDownToTheKernel) {
  Store s = store();
  const auto a = write_synthetic_run(s, run("base", 1));
  SyntheticRun slow = run("slow", 2);
  slow.layernorm_extra_ms = 6;  // +6 % of a 100 ms step, all of it in the LayerNorm backward
  const auto b = write_synthetic_run(s, slow);
  const RegressionReport r = check_regression(s, {a}, {b});
  EXPECT_TRUE(r.failed);
  const auto& step = metric(r, "step_time");
  EXPECT_EQ(step.verdict, Verdict::kRegression);
  EXPECT_NEAR(step.change.estimate, 0.06, 0.02);
  EXPECT_LT(step.change.low, 0.06);
  EXPECT_GT(step.change.high, 0.06);
  EXPECT_EQ(metric(r, "throughput").verdict, Verdict::kRegression);
  EXPECT_EQ(metric(r, "phase:backward").verdict, Verdict::kRegression);
  EXPECT_NE(metric(r, "phase:forward").verdict, Verdict::kRegression);
  const auto kernel = std::find_if(r.contributors.begin(), r.contributors.end(),
                                   [](const Contributor& c) { return c.kind == "kernel"; });
  ASSERT_NE(kernel, r.contributors.end());
  EXPECT_EQ(kernel->name, "at::native::layer_norm_grad_input_kernel");  // the largest mover comes first
  EXPECT_NEAR(kernel->delta_ms, 6, 1e-6);
  EXPECT_NEAR(kernel->percent_of_step, 6, 0.5);
  ASSERT_TRUE(kernel->share_of_change);
  EXPECT_NEAR(*kernel->share_of_change, 1.0, 0.35);
  const auto gemm = std::find_if(r.contributors.begin(), r.contributors.end(), [](const Contributor& c) { return c.name == "gemm"; });
  ASSERT_NE(gemm, r.contributors.end());
  EXPECT_NEAR(gemm->baseline_ms, 45, 1e-6);  // both GEMM kernels in one family
  EXPECT_NEAR(gemm->delta_ms, 0, 1e-6);
}

TEST_F(RegressionCheck, FailOnDecidesWhatGates) {
  Store s = store();
  const auto a = write_synthetic_run(s, run("base", 1));
  SyntheticRun big = run("big", 1);  // same noise, 5 % more memory
  big.peak_bytes = (std::int64_t{1} << 30) * 105 / 100;
  const auto b = write_synthetic_run(s, big);
  EXPECT_TRUE(check_regression(s, {a}, {b}).failed);  // peak_memory gates by default at 2 %
  CheckOptions only_time;
  only_time.thresholds = parse_thresholds("step_time:+3%");
  only_time.fail_on_given = true;
  const RegressionReport r = check_regression(s, {a}, {b}, only_time);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(metric(r, "peak_memory").verdict, Verdict::kRegression);  // still reported
  EXPECT_FALSE(metric(r, "peak_memory").gating);
  CheckOptions loose;
  loose.thresholds = parse_thresholds("peak_memory:+10%");
  loose.fail_on_given = true;
  EXPECT_EQ(metric(check_regression(s, {a}, {b}, loose), "peak_memory").verdict, Verdict::kWithinThreshold);
}

TEST_F(RegressionCheck, VersionsAndFlippedDefaultsAreListed) {
  Store s = store();
  SyntheticRun old_ds = run("old", 1), new_ds = run("new", 2);
  old_ds.deepspeed_version = "0.19.2";
  new_ds.deepspeed_version = "0.19.7";
  new_ds.shardscope_version = "0.2.0";
  new_ds.config_json = R"({"train_micro_batch_size_per_gpu": 8})";
  const auto r = check_regression(s, {write_synthetic_run(s, old_ds)}, {write_synthetic_run(s, new_ds)});
  const ChangedValue* ds = change(r, "versions.deepspeed");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->kind, "version");
  ASSERT_NE(change(r, "versions.shardscope"), nullptr);
  const ChangedValue* config = change(r, "train_micro_batch_size_per_gpu");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->values[1], std::optional<std::string>("8"));
  const ChangedValue* clip = change(r, "gradient_clipping");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->kind, "default_flip");
  EXPECT_EQ(clip->values[0], std::optional<std::string>("0.0 (default of 0.19.2)"));
  EXPECT_EQ(clip->values[1], std::optional<std::string>("1.0 (default of 0.19.7)"));
  EXPECT_NE(clip->note.find("0.19.3"), std::string::npos);
  EXPECT_NE(change(r, "process_group_timeout"), nullptr);
  EXPECT_EQ(change(r, "bf16.check_grad_overflow"), nullptr);  // no bf16 block: it does not matter
}

TEST_F(RegressionCheck, UnusableInputIsRefused) {
  Store s = store();
  const auto a = write_synthetic_run(s, run("base", 1));
  SyntheticRun other = run("wide", 2);
  other.train_flags = {"--hidden", "512"};
  const auto b = write_synthetic_run(s, other);
  try {
    check_regression(s, {a}, {b});
    FAIL() << "different models were compared";
  } catch (const SessionsError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("hidden=512"), std::string::npos) << e.what();
  }
  SyntheticRun same = run("same", 3);
  same.train_flags = {"--hidden", "256"};  // the default, spelled out: the same model
  EXPECT_NO_THROW(check_regression(s, {a}, {write_synthetic_run(s, same)}));
  SyntheticRun short_run = run("short", 4);
  short_run.steps = 5;
  EXPECT_THROW(check_regression(s, {a}, {write_synthetic_run(s, short_run)}), SessionsError);
  EXPECT_THROW(check_regression(s, {a}, {a}), SessionsError);
  SyntheticRun live = run("live", 5);
  auto events = testing::synthetic_run(live);
  events.pop_back();  // no RunEnd: still running
  StoreWriter(s).write("uid-live-5", events);
  const auto with_live = check_regression(s, {a}, {find_session(s, "uid-live-5")});
  EXPECT_NE(std::find_if(with_live.notes.begin(), with_live.notes.end(),
                         [](const std::string& n) { return n.find("still running") != std::string::npos; }),
            with_live.notes.end());
  EXPECT_THROW(check_regression(s, {}, {a}), SessionsError);
}

TEST_F(RegressionCheck, TrendFindsTheVersionWhereStepTimeStepped) {
  Store s = store();
  // 60 nightly sessions over 6 releases; 0.1.3 made the step 8 % slower and nothing else moved.
  for (int v = 0; v < 6; ++v)
    for (int k = 0; k < 10; ++k) {
      SyntheticRun r = run("nightly", static_cast<std::uint64_t>(100 * v + k));
      r.profiled = false;
      r.steps = 60;
      r.shardscope_version = "0.1." + std::to_string(v);
      r.git_hash = "";
      r.started_at = 1795900000 + 86400.0 * (10 * v + k);
      r.layernorm_extra_ms = v >= 3 ? 8 : 0;
      write_synthetic_run(s, r);
    }
  TrendOptions options;
  options.grouping = TrendGrouping::kVersion;
  const TrendReport t = metric_trend(s, "step_time", options);
  ASSERT_EQ(t.groups.size(), 6u);
  for (std::size_t i = 0; i < t.groups.size(); ++i) {
    const auto& g = t.groups[i];
    EXPECT_EQ(g.key, "0.1." + std::to_string(i));
    EXPECT_EQ(g.session_ids.size(), 10u);
    EXPECT_LE(g.value.low, g.value.estimate);
    EXPECT_GE(g.value.high, g.value.estimate);
    if (i == 0) continue;
    ASSERT_TRUE(g.from_previous);
    EXPECT_EQ(g.from_previous->verdict == Verdict::kRegression, i == 3) << g.key;
    EXPECT_NE(g.from_previous->verdict, Verdict::kImprovement) << g.key;
  }
  EXPECT_NEAR(t.groups[3].from_previous->change.estimate, 0.08, 0.02);
  options.grouping = TrendGrouping::kSession;
  EXPECT_EQ(metric_trend(s, "step_time", options).groups.size(), 60u);
  options.grouping = TrendGrouping::kDate;  // one session a day
  EXPECT_EQ(metric_trend(s, "step_time", options).groups.size(), 60u);
  options.grouping = TrendGrouping::kTag;   // all tagged "nightly"
  const TrendReport by_tag = metric_trend(s, "peak_memory", options);
  ASSERT_EQ(by_tag.groups.size(), 1u);
  EXPECT_EQ(by_tag.groups[0].key, "nightly");
  EXPECT_DOUBLE_EQ(by_tag.groups[0].value.estimate, double(std::int64_t{1} << 30));
  EXPECT_THROW(metric_trend(s, "step_tme", options), SessionsError);
}

}  // namespace
}  // namespace shardscope::sessions
