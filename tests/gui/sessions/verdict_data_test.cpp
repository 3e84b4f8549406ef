// The Verdict and Trend tabs' data (app/gui/sessions/verdict_data.hpp) on sessions written by the
// test with the regression tests' synthetic runs (AR(1) step-time noise, a known slowdown in the
// LayerNorm backward): every cell is check_regression's or metric_trend's own number, the tones
// follow the verdicts, the CLI twins are the commands that print the same report, the ways to split
// the compared sessions, where a contributor is in the profile, and bad input named, not thrown.
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/sessions/verdict_data.hpp"
#include "profiler/profile_selection.hpp"
#include "sessions/regression_check.hpp"
#include "sessions/regression_trend.hpp"
#include "sessions/store.hpp"
#include "tests/sessions/regression_fixtures.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
using ss::testing::SyntheticRun;

namespace {

SyntheticRun run(const std::string& name, std::uint64_t seed) {
  SyntheticRun r;
  r.name = name, r.seed = seed, r.profiled = true;
  return r;
}

SessionRef ref(const QString& file, std::int64_t id, const std::string& name) {
  return {file.toStdString(), id, name + " #" + std::to_string(id)};
}

const TableRow* row_named(const TextTable& t, const std::string& first_cell) {
  for (const auto& r : t.rows)
    if (!r.cells.empty() && r.cells[0].text == first_cell) return &r;
  return nullptr;
}

}  // namespace

class VerdictDataTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_, other_file_;
  std::int64_t base_ = 0, slow_ = 0, repeat_a_ = 0, repeat_b_ = 0, old_ds_ = 0, other_model_ = 0;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    file_ = dir_.filePath("runs.db");
    ss::Store store = ss::Store::open_or_create(file_.toStdString());
    base_ = ss::testing::write_synthetic_run(store, run("base", 1));
    SyntheticRun slow = run("slow", 2);
    slow.layernorm_extra_ms = 6;  // +6 % of a 100 ms step, all of it in the LayerNorm backward
    slow.started_at += 3600;
    slow_ = ss::testing::write_synthetic_run(store, slow);
    repeat_a_ = ss::testing::write_synthetic_run(store, run("repeat", 3));
    repeat_b_ = ss::testing::write_synthetic_run(store, run("repeat", 4));
    SyntheticRun old_ds = run("old-deepspeed", 5);
    old_ds.deepspeed_version = "0.19.2";  // before gradient_clipping's default flipped to 1.0
    old_ds_ = ss::testing::write_synthetic_run(store, old_ds);
    SyntheticRun other = run("other-model", 6);
    other.train_flags = {"--model", "llama", "--hidden", "512"};
    other_model_ = ss::testing::write_synthetic_run(store, other);
    other_file_ = dir_.filePath("other.db");
    ss::Store other_store = ss::Store::open_or_create(other_file_.toStdString());
    ss::testing::write_synthetic_run(other_store, run("elsewhere", 7));
  }

  void metricRowsAreTheLibrarysReport() {
    VerdictRequest q{{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "", -1};
    const VerdictView v = compute_verdict(q);
    QVERIFY2(v.error.empty(), v.error.c_str());
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    const ss::RegressionReport lib = ss::check_regression(store, {base_}, {slow_});
    QCOMPARE(v.metrics.rows.size(), lib.metrics.size());
    QCOMPARE(v.metrics.headers.size(), std::size_t(7));
    for (std::size_t i = 0; i < lib.metrics.size(); ++i) {
      const auto& m = lib.metrics[i];
      const auto& cells = v.metrics.rows[i].cells;
      QCOMPARE(*cells[1].value, m.baseline);
      QCOMPARE(*cells[2].value, m.candidate);
      QCOMPARE(*cells[3].value, m.change.estimate);  // the same seed, the same bootstrap: the same numbers
      QCOMPARE(*cells[4].value, m.change.low);
      QCOMPARE(cells[4].text, "[" + signed_percent(m.change.low) + ", " + signed_percent(m.change.high) + "]");
      QCOMPARE(cells[6].text, verdict_text(m.verdict, m.gating));
    }
    // The slowdown: step time a gating regression of about +6 %, coloured so.
    const TableRow* step = row_named(v.metrics, "step_time (ms)");
    QVERIFY(step);
    QCOMPARE(step->tone, RowTone::kRegression);
    QCOMPARE(step->cells[6].text, std::string("REGRESSION"));
    QVERIFY(std::abs(*step->cells[3].value - 0.06) < 0.02);
    QVERIFY(step->tooltip.find("circular blocks") != std::string::npos);
    QCOMPARE(row_named(v.metrics, "phase:backward (ms)")->tone, RowTone::kRegression);
    QVERIFY(row_named(v.metrics, "phase:forward (ms)")->tone != RowTone::kRegression);
    QVERIFY(v.report.failed);
    // The CLI's closing line, down to the kernel.
    QVERIFY2(v.headline.rfind("FAILED: step_time +", 0) == 0, v.headline.c_str());
    QVERIFY2(v.headline.find("is kernel at::native::layer_norm_grad_input_kernel") != std::string::npos, v.headline.c_str());
    QCOMPARE(v.cli, "shardscope sessions check --db " + file_.toStdString() + " --baseline " + std::to_string(base_) +
                        " --candidate " + std::to_string(slow_));
  }

  void contributorsNameTheKernel() {
    const VerdictView v = compute_verdict({{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "", -1});
    QVERIFY(v.report.profiled);
    QCOMPARE(v.contributors.rows.size(), v.report.contributors.size());
    const auto& first = v.contributors.rows.front().cells;  // kernels first, the largest mover on top
    QCOMPARE(first[0].text, std::string("kernel"));
    QCOMPARE(first[1].text, std::string("at::native::layer_norm_grad_input_kernel"));
    QVERIFY(std::abs(*first[4].value - 6.0) < 1e-6);
    QCOMPARE(first[4].text, std::string("+6.000"));
    QCOMPARE(*first[6].value, *v.report.contributors.front().share_of_change);
    bool nccl = false, phase = false;
    for (const auto& r : v.contributors.rows) {
      nccl = nccl || (r.cells[0].text == "collective" && r.cells[1].text == "nccl:AllReduce");
      phase = phase || (r.cells[0].text == "phase" && r.cells[1].text == "backward");
    }
    QVERIFY(nccl);
    QVERIFY(phase);
  }

  void contributorsOpenWhereTheyAreInTheProfile() {
    const VerdictView v = compute_verdict({{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "", -1});
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    const auto records = shardscope::profiler::load_profile_records(store, slow_);
    const auto find = [&](const std::string& kind, const std::string& name) {
      for (const auto& c : v.report.contributors)
        if (c.kind == kind && c.name == name) return c;
      throw std::runtime_error("no contributor " + name);
    };
    const ProfileTarget kernel = profile_target(find("kernel", "at::native::layer_norm_grad_input_kernel"), records);
    QCOMPARE(kernel.pane, std::string("Top kernels"));
    QCOMPARE(kernel.selection.kernel,
             std::string("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*, int)"));
    const ProfileTarget gemm = profile_target(find("kernel", "gemm"), records);  // the family's longest kernel
    QCOMPARE(gemm.selection.kernel, std::string("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"));
    const ProfileTarget nccl = profile_target(find("collective", "nccl:AllReduce"), records);
    QCOMPARE(nccl.pane, std::string("Collectives"));
    QCOMPARE(nccl.selection.collective, std::string("all_reduce"));
    const ProfileTarget phase = profile_target(find("phase", "backward"), records);
    QCOMPARE(phase.pane, std::string("Phases"));
    QVERIFY(phase.selection.empty());
    ss::Contributor missing{"kernel", "no_such_family", 0, 1, 1, std::nullopt, 0};
    const ProfileTarget none = profile_target(missing, records);
    QVERIFY(none.selection.empty());
    QVERIFY(none.note.find("no_such_family") != std::string::npos);
  }

  void repeatsOfOneRunAreWithinNoise() {
    const VerdictView v = compute_verdict({{ref(file_, base_, "base"), ref(file_, repeat_a_, "repeat")},
                                           {ref(file_, repeat_b_, "repeat"), ref(file_, old_ds_, "old-deepspeed")}, "", -1});
    // old_ds_ differs only in its DeepSpeed version: no metric moves, the flip is listed.
    QVERIFY2(v.error.empty(), v.error.c_str());
    QVERIFY(!v.report.failed);
    QCOMPARE(v.headline, std::string("OK: no gating metric regressed beyond its threshold"));
    for (const auto& r : v.metrics.rows) QVERIFY2(r.tone != RowTone::kRegression, r.cells[0].text.c_str());
    QCOMPARE(row_named(v.metrics, "step_time (ms)")->tone, RowTone::kWithinNoise);
    const TableRow* flip = nullptr;
    for (const auto& r : v.changes.rows)
      if (r.cells[1].text == "gradient_clipping") flip = &r;
    QVERIFY(flip);
    QCOMPARE(flip->tone, RowTone::kDefaultFlip);
    QCOMPARE(flip->cells[0].text, std::string("default_flip"));
    QCOMPARE(flip->cells.size(), std::size_t(2 + 4 + 1));  // kind, path, four sessions, note
    QCOMPARE(flip->cells[5].text, std::string("0.0 (default of 0.19.2)"));
    QVERIFY(flip->cells.back().text.find("0.19.3") != std::string::npos);
    QCOMPARE(v.changes.headers[2], "#" + std::to_string(base_) + " base");
  }

  void failOnDecidesWhatGates() {
    VerdictRequest q{{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "peak_memory:+2%", 20};
    const VerdictView v = compute_verdict(q);
    QVERIFY2(v.error.empty(), v.error.c_str());
    QVERIFY(!v.report.failed);  // step time still regressed, but only peak memory gates now
    const TableRow* step = row_named(v.metrics, "step_time (ms)");
    QCOMPARE(step->cells[6].text, std::string("regression (not gating)"));
    QVERIFY(step->cells[5].text.find("(info)") != std::string::npos);
    QCOMPARE(v.report.warmup_steps, (std::vector<std::int64_t>{20, 20}));
    QVERIFY2(v.cli.find("--fail-on 'peak_memory:+2%' --warmup 20") != std::string::npos, v.cli.c_str());
  }

  void badInputIsNamedNotThrown() {
    const VerdictView bad = compute_verdict({{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "step_time:-3%", -1});
    QVERIFY2(bad.error.find("step_time") != std::string::npos, bad.error.c_str());  // a sign against the metric's worse side
    QVERIFY(bad.metrics.rows.empty());
    const VerdictView files = compute_verdict({{ref(file_, base_, "base")}, {ref(other_file_, 1, "elsewhere")}, "", -1});
    QVERIFY2(files.error.find("one file") != std::string::npos, files.error.c_str());
    const VerdictView model = compute_verdict({{ref(file_, base_, "base")}, {ref(file_, other_model_, "other-model")}, "", -1});
    QVERIFY2(model.error.find("trains another model") != std::string::npos, model.error.c_str());
    const VerdictView alone = compute_verdict({{ref(file_, base_, "base")}, {}, "", -1});
    QVERIFY(!alone.error.empty());
  }

  void groupChoices() {
    const std::vector<SessionRef> refs = {ref(file_, 1, "a1"), ref(file_, 2, "a2"), ref(file_, 3, "b1"), ref(file_, 4, "b2")};
    const auto choices = verdict_group_choices(refs, {"aaaaaaaa11", "aaaaaaaa11", "bbbbbbbb22", "bbbbbbbb22"});
    QCOMPARE(choices.size(), std::size_t(4));  // the first against each other one, then repeats by config
    QCOMPARE(choices[0].baseline, (std::vector<std::size_t>{0}));
    QCOMPARE(choices[2].candidate, (std::vector<std::size_t>{3}));
    QCOMPARE(choices[0].label, std::string("a2 #2 vs a1 #1 (baseline)"));
    QCOMPARE(choices[3].baseline, (std::vector<std::size_t>{0, 1}));
    QCOMPARE(choices[3].candidate, (std::vector<std::size_t>{2, 3}));
    QVERIFY(choices[3].label.rfind("repeats by config: 2", 0) == 0);
    QCOMPARE(verdict_group_choices({refs[0], refs[1]}, {"a", "b"}).size(), std::size_t(1));  // a pair has no repeats
    QCOMPARE(verdict_group_choices(refs, {"a", "b", "c", "c"}).size(), std::size_t(3));     // three configs: no split
    QVERIFY(verdict_group_choices({refs[0]}, {"a"}).empty());
  }

  void trendIsTheLibrarysTrend() {
    const QString file = dir_.filePath("trend.db");
    {
      ss::Store store = ss::Store::open_or_create(file.toStdString());
      for (int i = 0; i < 6; ++i) {  // three nightly runs of v1 at 100 ms, then three of v2 at 110 ms
        SyntheticRun r = run("nightly", std::uint64_t(10 + i));
        r.profiled = false;
        r.tags = {i < 3 ? "v1" : "v2"};
        r.step_ms = i < 3 ? 100 : 110;
        r.peak_bytes = (std::int64_t{3} << 30) + i;
        r.started_at += 86400.0 * i;
        ss::testing::write_synthetic_run(store, r);
      }
    }
    TrendRequest q;
    q.file = file.toStdString();
    q.grouping = ss::TrendGrouping::kTag;
    const TrendView v = compute_trend(q);
    QVERIFY2(v.error.empty(), v.error.c_str());
    ss::Store store = ss::Store::open(file.toStdString(), {});
    ss::TrendOptions options;
    options.grouping = ss::TrendGrouping::kTag;
    const ss::TrendReport lib = ss::metric_trend(store, "step_time", options);
    QCOMPARE(v.groups.rows.size(), std::size_t(2));
    QCOMPARE(lib.groups.size(), std::size_t(2));
    for (std::size_t i = 0; i < 2; ++i) {
      QCOMPARE(v.groups.rows[i].cells[0].text, lib.groups[i].key);
      QCOMPARE(*v.groups.rows[i].cells[1].value, 3.0);
      QCOMPARE(*v.groups.rows[i].cells[2].value, lib.groups[i].value.estimate);
      QCOMPARE(*v.groups.rows[i].cells[3].value, lib.groups[i].value.low);
    }
    QCOMPARE(v.groups.rows[0].cells[0].text, std::string("v1"));
    QCOMPARE(v.groups.rows[0].tone, RowTone::kPlain);  // nothing before it
    QCOMPARE(v.groups.rows[1].tone, RowTone::kRegression);
    QCOMPARE(*v.groups.rows[1].cells[4].value, lib.groups[1].from_previous->change.estimate);
    QVERIFY(std::abs(*v.groups.rows[1].cells[4].value - 0.10) < 0.03);
    QCOMPARE(v.axis_title, std::string("step_time (ms)"));
    QCOMPARE(v.axis_scale, 1.0);
    QCOMPARE(v.cli, "shardscope sessions trend step_time --db " + file.toStdString() + " --by tag");
    q.metric = "peak_memory";
    q.grouping = ss::TrendGrouping::kSession;
    q.tag = "v2";
    const TrendView memory = compute_trend(q);
    QVERIFY2(memory.error.empty(), memory.error.c_str());
    QCOMPARE(memory.groups.rows.size(), std::size_t(3));  // only v2's sessions, one group each
    QCOMPARE(memory.axis_title, std::string("peak_memory (GiB)"));
    QCOMPARE(memory.axis_scale, double(1ull << 30));
    QCOMPARE(memory.groups.rows[0].cells[2].text, verdict_value_text(double((std::int64_t{3} << 30) + 3), "bytes"));
    QVERIFY2(memory.cli.find("--by session --tag v2") != std::string::npos, memory.cli.c_str());
    q.metric = "step_tme";
    QVERIFY(compute_trend(q).error.find("step_tme") != std::string::npos);
    q.file.clear();
    QVERIFY(!compute_trend(q).error.empty());
  }

  void trendMetricChoicesFollowTheReport() {
    QCOMPARE(trend_metric_choices(nullptr).size(), std::size_t(6));
    const VerdictView v = compute_verdict({{ref(file_, base_, "base")}, {ref(file_, slow_, "slow")}, "", -1});
    const auto choices = trend_metric_choices(&v.report);
    QVERIFY(std::find(choices.begin(), choices.end(), "phase:backward") != choices.end());
    QVERIFY(std::find(choices.begin(), choices.end(), "comm:all_reduce") != choices.end());
  }

  void valueTexts() {
    QCOMPARE(verdict_value_text(0.4567, "fraction"), std::string("45.67%"));
    QCOMPARE(verdict_value_text(105.123456, "ms"), std::string("105.12"));
    QCOMPARE(signed_percent(0.0602), std::string("+6.02%"));
    QCOMPARE(signed_percent(-0.001), std::string("-0.10%"));
    QCOMPARE(verdict_text(ss::Verdict::kWithinThreshold, true), std::string("within threshold"));
  }
};

QTEST_GUILESS_MAIN(VerdictDataTest)
#include "verdict_data_test.moc"
