// The Sessions & Compare page on sessions written by the test: the list and its filter, a
// comparison of 2 sessions whose tables hold exactly what the sessions library computes (the run
// diff showing a model shape the config diff cannot), one session alone, the same comparison
// across two files, smoothing and downsampling of curves, log-scale ticks and flat curves, the
// legend of exported charts, renaming, tagging and deleting, CSV export (the list's selected rows,
// and the selected sessions' own tables as `sessions export` writes them), samples/s when a
// DeepSpeed run is compared with engine runs, "identical" for a diff with no difference, the run
// doctor's findings and their jump to the curves, and the page inside the main window. The profile view has its own test (profile_view_test.cpp).
#include <chrono>
#include <cmath>

#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QRegularExpression>
#include <QTimer>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QWheelEvent>
#include <qcustomplot.h>

#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/sessions/compare_data.hpp"
#include "app/gui/sessions/compare_table_models.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/sessions/session_edits.hpp"
#include "app/gui/common/series_downsampling.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/sessions/verdict_models.hpp"
#include "diagnosis/findings_compare.hpp"
#include "diagnosis/stored_session.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/gui/common/session_test_data.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

class SessionsPageTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_a_, file_b_, file_c_;

  static ss::Store reader(const QString& path) { return ss::Store::open(path.toStdString(), {}); }

  void openBoth(SessionsPage& page) {
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_a_, file_b_});
    QVERIFY(loaded.wait(10000));
  }

  // Opens `file` alone, selects the sessions named `names` and compares them, curves drawn.
  static void compareByName(SessionsPage& page, const QString& file, const QStringList& names) {
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file});
    QVERIFY(loaded.wait(10000));
    page.selectByName(names);
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
  }

  static void compareAndWait(SessionsPage& page, const std::vector<SessionRef>& refs) {
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compare(refs);
    QVERIFY(drawn.wait(10000));
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeSessionsTest");
    QSettings().clear();
    QVERIFY(dir_.isValid());
    file_a_ = dir_.filePath("a.db");
    file_b_ = dir_.filePath("b.db");
    testing::RunSpec alpha{"alpha", 2, 20, 100, 8};
    testing::RunSpec beta{"beta", 2, 20, 80, 6};
    alpha.train_args = {"--model", "gpt2", "--hidden", "64", "--steps", "20"};
    beta.train_args = {"--model", "gpt2", "--hidden", "128", "--steps", "20"};
    beta.config_json = R"({"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}})";
    beta.started_at += 3600;
    beta.profiled = true;
    testing::write_sessions(file_a_, {alpha, beta});
    testing::RunSpec gamma{"gamma", 1, 10, 120, 9};
    gamma.host = "node-b";
    gamma.started_at += 7200;
    testing::write_sessions(file_b_, {gamma});
    testing::RunSpec delta{"delta", 2, 10, 90, 7};  // a DeepSpeed run on the CPU: samples/s, TFLOP/s of 0
    delta.tokens = false;
    delta.tflops = 0;
    file_c_ = dir_.filePath("c.db");
    testing::write_sessions(file_c_, {delta});
  }

  void catalogListsAndFilters() {
    SessionsPage page;
    openBoth(page);
    QCOMPARE(page.catalogModel()->rowCount(), 3);
    auto* proxy = page.filterProxy();
    QCOMPARE(proxy->rowCount(), 3);
    page.filterField()->setText("node-b");  // by host
    QCOMPARE(proxy->rowCount(), 1);
    QCOMPARE(proxy->index(0, SessionCatalogModel::kName).data().toString(), QString("gamma"));
    page.filterField()->setText("a.db ALPHA");  // file and name, case-insensitive, all words
    QCOMPARE(proxy->rowCount(), 1);
    page.filterField()->setText(QString::fromStdString(ss::compute_config_hash(
        R"({"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}})").substr(0, 6)));
    QCOMPARE(proxy->rowCount(), 1);
    QCOMPARE(proxy->index(0, SessionCatalogModel::kName).data().toString(), QString("beta"));
    page.filterField()->clear();
    proxy->setStatus("running");
    QCOMPARE(proxy->rowCount(), 0);
    proxy->setStatus("completed");
    QCOMPARE(proxy->rowCount(), 3);
    // Steps and ranks as the library lists them.
    const auto* model = page.catalogModel();
    for (int r = 0; r < model->rowCount(); ++r) {
      const auto& info = model->row(r).info;
      QCOMPARE(model->index(r, SessionCatalogModel::kSteps).data(SessionCatalogModel::kSortRole).toLongLong(),
               info.name == "gamma" ? 10 : 20);
    }
    // Recent files are remembered for the next start.
    QCOMPARE(QSettings().value("sessions/recentFiles").toStringList().size(), 2);
  }

  // The run doctor's findings of the compared sessions, as `sessions show` lists them, and a
  // double-click that shows a finding's steps in the curves.
  void findingsListedAndOpenTheirSteps() {
    const QString file = dir_.filePath("findings.db");
    testing::RunSpec slow{"slowrank", 2, 40, 100, 8};
    ss::Finding straggler;
    straggler.kind = "straggler";
    straggler.severity = "warning";
    straggler.first_step = 12;
    straggler.last_step = 30;
    straggler.ranks = {1};
    straggler.summary = "node-a:1 is 25% slower than its peers in backward";
    straggler.evidence = "backward 125 ms against a median of 100 ms";
    straggler.suggested_fix = "look at node-a's GPU clocks";
    ss::Finding nan = straggler;
    nan.kind = "nan_loss";
    nan.severity = "error";
    nan.first_step = nan.last_step = 35;
    nan.ranks = {0};
    nan.summary = "rank 0's loss is NaN at step 35";
    slow.findings = {straggler, nan};
    testing::write_sessions(file, {slow});
    SessionsPage page;
    compareByName(page, file, {"slowrank"});
    ss::Store store = reader(file);
    const auto id = page.comparison().sessions.front().id;
    const auto expected = shardscope::diagnosis::review_stored_session(store, id, ss::load_session(store, id));
    auto* model = page.findingsModel();
    QTRY_COMPARE(model->rowCount(), static_cast<int>(expected.size()));  // read after the curves
    QVERIFY(model->rowCount() >= 2);
    QStringList kinds;
    for (int r = 0; r < model->rowCount(); ++r) kinds << model->index(r, 3).data().toString();
    QVERIFY2(kinds.contains("straggler") && kinds.contains("nan_loss"), qPrintable(kinds.join(",")));
    const int nan_row = static_cast<int>(kinds.indexOf("nan_loss"));
    QCOMPARE(model->index(nan_row, 1).data().toString(), QString());  // one session: nothing to mark against
    QCOMPARE(model->index(nan_row, 2).data().toString(), QString("error"));
    QCOMPARE(model->index(nan_row, 4).data().toString(), QString("35"));
    QCOMPARE(model->index(nan_row, 5).data().toString(), QString("0"));
    QVERIFY(model->index(nan_row, 0).data(Qt::ToolTipRole).toString().contains("fix: look at node-a"));
    // Straggler: steps 12-30, shown with 18 steps on each side (none before step 0).
    const int straggler_row = static_cast<int>(kinds.indexOf("straggler"));
    QCOMPARE(model->index(straggler_row, 4).data().toString(), QString("12-30"));
    page.showTab("Findings");
    page.openFinding(straggler_row);
    auto* step_time = page.chart("step_time_ms");
    QVERIFY(step_time);
    QCOMPARE(step_time->xAxis->range().lower, 0.0);
    QCOMPARE(step_time->xAxis->range().upper, 48.0);
    QVERIFY(step_time->isVisible() || !page.isVisible());
  }

  // Two compared sessions: the later one's findings marked kept / new / gone against the baseline,
  // exactly as diagnosis::compare_stored_findings (`sessions compare`) marks them.
  void findingsMarkedAgainstTheBaseline() {
    const QString file = dir_.filePath("findings_compare.db");
    ss::Finding straggler;
    straggler.kind = "straggler";
    straggler.severity = "warning";
    straggler.first_step = 12;
    straggler.last_step = 30;
    straggler.ranks = {1};
    straggler.summary = "node-a:1 is slower than its peers";
    ss::Finding nan = straggler;
    nan.kind = "nan_loss";
    nan.severity = "error";
    nan.ranks = {0};
    ss::Finding oom = nan;
    oom.kind = "oom";
    testing::RunSpec first{"findings-first", 2, 40, 100, 8};
    testing::RunSpec second{"findings-second", 2, 40, 100, 8};
    first.findings = {straggler, nan};
    second.findings = {straggler, oom};
    testing::write_sessions(file, {first, second});
    SessionsPage page;
    compareByName(page, file, {"findings-first", "findings-second"});
    const auto& sessions = page.comparison().sessions;
    QCOMPARE(sessions.size(), std::size_t(2));
    ss::Store store = reader(file);
    const auto rows = shardscope::diagnosis::compare_stored_findings(store, {sessions[0].id, sessions[1].id});
    // The library's marks, row by row as the tab lists them: per session, in the library's order.
    QStringList expected;
    for (std::size_t s = 0; s < 2; ++s)
      for (const auto& r : rows)
        if (r.changes[s] != shardscope::diagnosis::FindingChange::kAbsent)
          expected << QString::fromStdString(sessions[s].label + " | " + shardscope::diagnosis::finding_change_name(r.changes[s]) + " | " + r.kind);
    auto* model = page.findingsModel();
    QTRY_COMPARE(model->rowCount(), static_cast<int>(expected.size()));
    QStringList shown;
    for (int r = 0; r < model->rowCount(); ++r)
      shown << QStringList{model->index(r, 0).data().toString(), model->index(r, 1).data().toString(),
                           model->index(r, 3).data().toString()}.join(" | ");
    QCOMPARE(shown, expected);
    // What the fixtures make of it: the straggler kept, the baseline's own failure gone, the other new.
    const bool first_is_baseline = sessions[0].label.rfind("findings-first", 0) == 0;
    const QString later = QString::fromStdString(sessions[1].label);
    QVERIFY2(shown.contains(later + " | kept | straggler"), qPrintable(shown.join("\n")));
    QVERIFY2(shown.contains(later + (first_is_baseline ? " | gone | nan_loss" : " | gone | oom")), qPrintable(shown.join("\n")));
    QVERIFY2(shown.contains(later + (first_is_baseline ? " | new | oom" : " | new | nan_loss")), qPrintable(shown.join("\n")));
    const int gone = static_cast<int>(shown.indexOf(QRegularExpression(".* \\| gone \\| .*")));
    QCOMPARE(model->index(gone, 1).data(TextTableModel::kToneRole).toInt(), static_cast<int>(RowTone::kImprovement));
    QVERIFY2(page.findChild<QLabel*>("findings_note")->text().contains("1 kept, 1 new, 1 gone"),
             qPrintable(page.findChild<QLabel*>("findings_note")->text()));
  }

  void compareTwoSessionsEqualsLibrary() {
    SessionsPage page;
    openBoth(page);
    page.selectByName({"alpha", "beta"});
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
    const Comparison& c = page.comparison();
    QVERIFY2(c.error.empty(), c.error.c_str());
    QVERIFY(c.same_file);
    // The list is newest first: beta (started later) is the baseline.
    QCOMPARE(QString::fromStdString(c.sessions[0].label).left(4), QString("beta"));
    ss::Store store = reader(file_a_);
    ss::CompareOptions options;
    options.diff_only = false;
    options.metrics = compared_metrics();
    const auto ref = ss::compare_sessions(store, {c.sessions[0].id, c.sessions[1].id}, options);
    auto* summary = page.summaryModel();
    QCOMPARE(summary->rowCount(), static_cast<int>(ref.summary.size()));
    for (int r = 0; r < summary->rowCount(); ++r) {
      const auto& row = ref.summary[static_cast<std::size_t>(r)];
      QCOMPARE(summary->index(r, 0).data().toString().toStdString(), row.field);
      for (std::size_t s = 0; s < 2; ++s) {
        const QVariant v = summary->index(r, SummaryDeltaModel::valueColumn(s)).data(SummaryDeltaModel::kValueRole);
        QCOMPARE(v.isValid(), row.values[s].has_value());
        if (v.isValid()) QCOMPARE(v.toDouble(), *row.values[s]);
      }
    }
    // beta: median step = slowest rank 80 + 5 = 85 ms, alpha 105 ms; lower is better, beta is marked.
    int step_row = -1;
    for (int r = 0; r < summary->rowCount(); ++r)
      if (summary->index(r, 0).data().toString() == "median_step_ms") step_row = r;
    QVERIFY(step_row >= 0);
    QCOMPARE(summary->index(step_row, 1).data(SummaryDeltaModel::kValueRole).toDouble(), 85.0);
    QCOMPARE(summary->index(step_row, 2).data(SummaryDeltaModel::kValueRole).toDouble(), 105.0);
    QCOMPARE(summary->index(step_row, 3).data(SummaryDeltaModel::kValueRole).toDouble(), 20.0);
    QVERIFY(summary->index(step_row, 1).data(SummaryDeltaModel::kBestRole).toBool());
    QVERIFY(!summary->index(step_row, 2).data(SummaryDeltaModel::kBestRole).toBool());
    // Config diff: only the micro-batch differs; the switch shows the rest.
    auto* config = page.configDiffModel();
    QCOMPARE(config->rowCount(), 1);
    QCOMPARE(config->index(0, 0).data().toString(), QString("train_micro_batch_size_per_gpu"));
    QCOMPARE(config->index(0, 1).data().toString(), QString("8"));
    QCOMPARE(config->index(0, 2).data().toString(), QString("4"));
    config->setDiffOnly(false);
    QCOMPARE(config->rowCount(), 2);
    // Run diff: the model shape the config diff cannot show (hidden 128 against 64).
    auto* run = page.runDiffModel();
    bool hidden = false;
    for (int r = 0; r < run->rowCount(); ++r)
      if (run->index(r, 0).data().toString() == "train.hidden") {
        hidden = true;
        QCOMPARE(run->index(r, 1).data().toString(), QString("128"));
        QCOMPARE(run->index(r, 2).data().toString(), QString("64"));
      }
    QVERIFY(hidden);
    // A long value (the command line) is cut in its cell, never pushing a session's column off
    // screen; its tooltip holds all of it.
    for (int r = 0; r < run->rowCount(); ++r)
      QCOMPARE(run->index(r, 1).data(Qt::ToolTipRole).toString(), run->index(r, 1).data().toString());
    for (QTableView* view : page.findChildren<QTableView*>())
      if (view->model() == run) QCOMPARE(view->horizontalHeader()->maximumSectionSize(), SessionsPage::kDiffColumnMaxWidth);
    // Curves: 8 metrics plus the two timers, full resolution (20 steps).
    QCOMPARE(c.curves.size(), compared_metrics().size() + 2);
    QCOMPARE(c.curves[0].metric, std::string("loss"));
    QCOMPARE(c.curves[0].sessions[1].y.size(), std::size_t(20));
    QCOMPARE(c.curves[0].sessions[1].y[9], 8 / (1 + 10 / 10.0));  // alpha's loss at step 10
    QCustomPlot* loss = page.chart("loss");
    QVERIFY(loss);
    QVERIFY(loss->graphCount() >= 2);
  }

  void smoothingMatchesLibraryAndLogScale() {
    SessionsPage page;
    openBoth(page);
    page.selectByName({"alpha", "gamma"});
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
    QVERIFY(!page.comparison().same_file);  // alpha in a.db, gamma in b.db
    ss::Smoothing ema;
    ema.kind = ss::SmoothingKind::kEma;
    ema.weight = 0.9;
    page.setSmoothing(ema);
    QVERIFY(drawn.wait(10000));
    const auto& curves = page.plotCurves();
    const auto& raw = page.comparison().curves[0].sessions[0];
    const auto expected = ss::smooth(raw.x, raw.y, ema);
    QCOMPARE(curves[0].smoothed[0].y.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) QCOMPARE(curves[0].smoothed[0].y[i], expected[i]);
    page.setLogScale(true);
    QCOMPARE(page.chart("loss")->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(QSettings().value("sessions/logScale").toBool());
  }

  void crossFileComparisonEqualsLibrary() {
    // The same two sessions in one file (library compare) and split over two files (composed).
    const QString one = dir_.filePath("one.db"), two = dir_.filePath("two.db");
    testing::RunSpec x{"x", 2, 12, 90, 7}, y{"y", 3, 15, 70, 5};
    y.host = "node-z";
    y.config_json = R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}})";
    testing::write_sessions(one, {x, y});
    testing::write_sessions(two, {y});
    ss::Store store = reader(one);
    const auto ids = std::vector<std::int64_t>{ss::find_session(store, "x"), ss::find_session(store, "y")};
    const Comparison same = compare_refs({{one.toStdString(), ids[0], "x"}, {one.toStdString(), ids[1], "y"}});
    const Comparison split = compare_refs({{one.toStdString(), ids[0], "x"}, {two.toStdString(), 1, "y"}});
    QVERIFY2(same.error.empty() && split.error.empty(), (same.error + split.error).c_str());
    QVERIFY(same.same_file && !split.same_file);
    QCOMPARE(split.summary.size(), same.summary.size());
    for (std::size_t r = 0; r < same.summary.size(); ++r) {
      QCOMPARE(split.summary[r].field, same.summary[r].field);
      QCOMPARE(split.summary[r].lower_is_better, same.summary[r].lower_is_better);
      if (split.summary[r].field == "wall_time_s") continue;
      QCOMPARE(split.summary[r].values, same.summary[r].values);
      QCOMPARE(split.summary[r].delta_percent, same.summary[r].delta_percent);
    }
    auto paths = [](const std::vector<ss::DiffRow>& rows) {
      std::vector<std::pair<std::string, bool>> out;
      for (const auto& r : rows) out.emplace_back(r.path, r.differs);
      return out;
    };
    QCOMPARE(paths(split.config_diff), paths(same.config_diff));
    QCOMPARE(paths(split.environment_diff), paths(same.environment_diff));
    QCOMPARE(split.curves.size(), same.curves.size());
    for (std::size_t i = 0; i < same.curves.size(); ++i) {
      QCOMPARE(split.curves[i].metric, same.curves[i].metric);
      QCOMPARE(split.curves[i].sessions[1].y, same.curves[i].sessions[1].y);
    }
  }

  void downsamplingKeepsExtremesAndScales() {
    // 100k steps x 8 sessions: the plot data stays ~1,000 buckets and keeps every spike.
    RawCurve curve{"loss", {}};
    for (int s = 0; s < 8; ++s) {
      Series series;
      for (int i = 0; i < 100000; ++i) {
        series.x.push_back(i);
        series.y.push_back(std::sin(i * 0.001 + s) + (i == 31337 + s ? 50.0 : 0.0) - (i == 77777 ? 20.0 : 0.0));
      }
      curve.sessions.push_back(std::move(series));
    }
    PlotOptions options;
    options.smoothing.kind = ss::SmoothingKind::kEma;
    const auto start = std::chrono::steady_clock::now();
    const auto plots = make_plot_curves({curve}, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("smoothing + downsampling 8 x 100k points: %.3f s", seconds);
    QVERIFY(seconds < 5);
    for (int s = 0; s < 8; ++s) {
      const auto& raw = plots[0].raw[static_cast<std::size_t>(s)];
      QVERIFY(raw.x.size() <= 4 * options.buckets);
      QVERIFY(raw.x.size() >= options.buckets);
      QCOMPARE(*std::max_element(raw.y.begin(), raw.y.end()), *std::max_element(curve.sessions[s].y.begin(), curve.sessions[s].y.end()));
      QCOMPARE(*std::min_element(raw.y.begin(), raw.y.end()), *std::min_element(curve.sessions[s].y.begin(), curve.sessions[s].y.end()));
      QCOMPARE(raw.x.front(), 0.0);
      QCOMPARE(raw.x.back(), 99999.0);
      QVERIFY(std::is_sorted(raw.x.begin(), raw.x.end()));
      QVERIFY(plots[0].smoothed[static_cast<std::size_t>(s)].x.size() <= 2 * options.buckets);
    }
    // LTTB on a triangle wave keeps its corners, first and last points.
    Series tri;
    for (int i = 0; i <= 1000; ++i) {
      tri.x.push_back(i);
      tri.y.push_back(i <= 500 ? i : 1000 - i);
    }
    const Series lttb = downsample_lttb(tri, 50);
    QCOMPARE(lttb.x.size(), std::size_t(50));
    QCOMPARE(lttb.x.front(), 0.0);
    QCOMPARE(lttb.x.back(), 1000.0);
    QVERIFY(std::find(lttb.x.begin(), lttb.x.end(), 500.0) != lttb.x.end());
    // Short series and NaN gaps.
    Series short_series{{0, 1, 2}, {1, NAN, 3}};
    QCOMPARE(downsample_min_max(short_series, 10).y, (std::vector<double>{1, 3}));
  }

  void oneSelectedSessionIsShownAlone() {
    SessionsPage page;
    openBoth(page);
    page.selectByName({"gamma"});
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    QSignalSpy status(&page, &SessionsPage::statusMessage);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
    const Comparison& c = page.comparison();
    QVERIFY2(c.error.empty(), c.error.c_str());
    QCOMPARE(c.sessions.size(), std::size_t(1));
    QCOMPARE(c.curves[0].sessions[0].y.size(), std::size_t(10));
    QVERIFY(page.chart("loss")->graphCount() >= 1);
    QCOMPARE(page.summaryModel()->columnCount(), 2);  // quantity and its value, no deltas
    bool one_file = false;  // not "Showing 1 session(s) from several files"
    for (const auto& message : status) one_file = one_file || message.first().toString() == "Showing 1 session";
    QVERIFY(one_file);
    QVERIFY(page.configDiffModel()->rowCount() >= 2);  // every key: there is nothing to differ from
    QVERIFY(page.runDiffModel()->rowCount() >= 2);
  }

  // Samples/s fill the throughput chart of a run without tokens/s, named so; a TFLOP/s curve of
  // zeros is an empty chart that says so over 0..1.
  void samplesPerSecondStandInForTokens() {
    SessionsPage page;
    compareByName(page, file_c_, {"delta"});
    QCustomPlot* throughput = page.chart("tokens_per_s");
    QCOMPARE(throughput->yAxis->label(), QString("samples/s"));
    QVERIFY(throughput->graphCount() >= 1);
    QVERIFY(throughput->graph(0)->dataCount() > 0);
    QVERIFY(throughput->yAxis->range().contains(8.0));  // 4 per rank, summed over 2
    QCustomPlot* tflops = page.chart("tflops");  // 0..1 on a linear axis; an earlier test's log scale keeps its own
    const QCPRange range = tflops->yAxis->range();
    QVERIFY2(range.lower >= 0 && range.upper >= 1 && range.size() >= 0.5,
             qPrintable(QString("TFLOP/s axis %1..%2").arg(range.lower).arg(range.upper)));
    QCOMPARE(tflops->itemCount(), 1);  // "not recorded in these sessions"
  }

  // A DeepSpeed run (samples/s only) beside engine runs (tokens/s too): its throughput was left out
  // of the tokens/s chart without a word. One chart has one unit, so every session's samples/s.
  void aMixedComparisonShowsEverySessionsSamples() {
    const QString path = dir_.filePath("mixed.db");
    testing::RunSpec engine{"engine run", 2, 10, 90, 7};
    testing::RunSpec deepspeed{"deepspeed run", 2, 10, 90, 7};
    deepspeed.tokens = false;
    deepspeed.started_at += 60;
    testing::write_sessions(path, {engine, deepspeed});
    SessionsPage page;
    compareByName(page, path, {"engine run", "deepspeed run"});
    QCustomPlot* throughput = page.chart("tokens_per_s");
    QCOMPARE(throughput->yAxis->label(), QString("samples/s"));
    int drawn_sessions = 0;
    for (int g = 0; g < throughput->graphCount(); ++g) drawn_sessions += throughput->graph(g)->dataCount() > 0;
    QVERIFY2(drawn_sessions >= 2, qPrintable(QString("%1 sessions drawn").arg(drawn_sessions)));
    QString note;
    for (int i = 0; i < throughput->itemCount(); ++i)
      if (auto* text = qobject_cast<QCPItemText*>(throughput->item(i))) note += text->text();
    QVERIFY2(note.contains("no tokens/s in") && note.contains("deepspeed run"), qPrintable(note));
    QVERIFY(!note.contains("engine run"));
  }

  // "Differences only" of two identical environments was an empty table: it says so now.
  void anIdenticalDiffSaysSo() {
    const QString path = dir_.filePath("twins.db");
    testing::RunSpec first{"twin a", 1, 5, 50, 3};
    testing::RunSpec second = first;
    second.name = "twin b";
    second.started_at += 60;
    testing::write_sessions(path, {first, second});
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({path});
    QVERIFY(loaded.wait(10000));
    page.selectByName({"twin a", "twin b"});
    QSignalSpy ready(&page, &SessionsPage::comparisonReady);
    page.compareSelected();
    QVERIFY(ready.wait(10000));
    DiffTableModel* environment = page.environmentDiffModel();
    QCOMPARE(environment->rowCount(), 0);
    QVERIFY2(environment->emptyNote().startsWith("Identical"), qPrintable(environment->emptyNote()));
    auto* note = page.findChild<QLabel*>("environment_diff_note");
    QVERIFY(note);
    QCOMPARE(note->text(), environment->emptyNote());
    QVERIFY(!note->isHidden());
    environment->setDiffOnly(false);  // every row shown: no note
    QVERIFY(environment->rowCount() > 0);
    QCOMPARE(environment->emptyNote(), QString());
    QVERIFY(note->isHidden());
  }

  void logTicksNeverRepeatAndFlatCurvesSitInsideTheFrame() {
    // A loss between 5.5 and 7 (less than a decade): a log axis labelled 6·10⁰ four times before.
    PlotCurve curve{"loss", {Series{{1, 2, 3, 4}, {7.0, 6.5, 6.0, 5.5}}}, {Series{}}};
    QCustomPlot plot;
    plot.resize(400, 300);
    draw_compare_curve(&plot, curve, {{"a.db", 1, "a"}}, CurveStyle{true, true});
    plot.replot();
    const QVector<QString> labels = plot.yAxis->tickVectorLabels();
    QVERIFY(labels.size() >= 2);
    QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
    QVERIFY(plot.yAxis->range().lower < 5.5 && plot.yAxis->range().upper > 7.0);
    // Over two decades the ticks are powers of ten.
    curve.raw[0].y = {0.5, 5, 50, 80};
    draw_compare_curve(&plot, curve, {{"a.db", 1, "a"}}, CurveStyle{true, true});
    plot.replot();
    QVERIFY(dynamic_cast<QCPAxisTickerLog*>(plot.yAxis->ticker().data()) != nullptr);
    // A flat memory curve (1 GiB every step) is drawn inside the frame, with room above and below.
    PlotCurve memory{"mem_peak", {Series{{1, 2, 3}, {double(1 << 30), double(1 << 30), double(1 << 30) + 64}}}, {Series{}}};
    draw_compare_curve(&plot, memory, {{"a.db", 1, "a"}}, CurveStyle{false, true});
    const QCPRange range = plot.yAxis->range();
    QVERIFY2(range.lower <= 1.0 - 0.015 && range.upper >= 1.0 + 0.015,
             qPrintable(QString("%1 .. %2").arg(range.lower, 0, 'g', 12).arg(range.upper, 0, 'g', 12)));
  }

  void exportedChartsCarryTheirLegend() {
    SessionsPage page;
    openBoth(page);
    page.selectByName({"alpha", "beta"});
    QSignalSpy drawn(&page, &SessionsPage::curvesDrawn);
    page.compareSelected();
    QVERIFY(drawn.wait(10000));
    QCustomPlot* loss = page.chart("loss");
    loss->resize(500, 350);
    QVERIFY(!loss->legend->visible());  // on screen the page's header names the colours
    QCOMPARE(loss->legend->itemCount(), 2);
    const QString with = dir_.filePath("loss_legend.png");
    QVERIFY(save_plot_png(loss, with, 1.0));
    QVERIFY(!loss->legend->visible());
    QVERIFY(loss->savePng(dir_.filePath("loss_plain.png"), 0, 0, 1.0));
    QImage a(with), b(dir_.filePath("loss_plain.png"));
    QCOMPARE(a.size(), b.size());
    QVERIFY(a != b);  // the legend is drawn into the exported image
  }

  void renameTagAndDeleteThroughTheLibrary() {
    const QString path = dir_.filePath("edits.db");
    testing::write_sessions(path, {testing::RunSpec{"first", 1, 3, 10, 2}, testing::RunSpec{"second", 1, 3, 10, 2}});
    SessionsPage page;
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({path});
    QVERIFY(loaded.wait(10000));
    auto ref_named = [&](const std::string& name) {
      for (int r = 0; r < page.catalogModel()->rowCount(); ++r)
        if (page.catalogModel()->row(r).info.name == name) return page.catalogModel()->ref(r);
      return SessionRef{};
    };
    QSignalSpy status(&page, &SessionsPage::statusMessage);
    QCOMPARE(page.renameSession(ref_named("first"), "baseline run"), QString());
    QVERIFY(loaded.wait(10000));
    bool twin = false;  // the CLI twin is reported (the reload's count follows it)
    for (const auto& message : status) twin = twin || message.first().toString().contains("shardscope sessions rename");
    QVERIFY(twin);
    QCOMPARE(page.tagSession(ref_named("baseline run"), {"lr sweep", "zero2"}, {}), QString());
    QVERIFY(loaded.wait(10000));
    ss::Store store = reader(path);
    QCOMPARE(ss::load_session(store, ss::find_session(store, "baseline run")).info.tags,
             (std::vector<std::string>{"lr sweep", "zero2"}));
    page.filterField()->setText("edits.db zero2");  // tags are filterable and shown
    QCOMPARE(page.filterProxy()->rowCount(), 1);
    QCOMPARE(page.filterProxy()->index(0, SessionCatalogModel::kTags).data().toString(), QString("lr sweep, zero2"));
    page.filterField()->clear();
    QVERIFY(!page.tagSession(ref_named("baseline run"), {"a,b"}, {}).isEmpty());  // refused, with the reason
    QCOMPARE(page.deleteSessions({ref_named("second")}), QString());
    QVERIFY(loaded.wait(10000));
    int left = 0;  // the page also lists the files earlier tests opened
    for (int r = 0; r < page.catalogModel()->rowCount(); ++r) left += page.catalogModel()->row(r).file == path.toStdString();
    QCOMPARE(left, 1);
    QCOMPARE(split_tag_list(" a, b ,,c "), (std::vector<std::string>{"a", "b", "c"}));
  }

  void tablesExportAsCsv() {
    SessionsPage page;
    openBoth(page);
    const auto& row_a = page.catalogModel()->ref(0);
    const auto& row_b = page.catalogModel()->ref(1);
    compareAndWait(page, {row_a, row_b});
    const QString path = dir_.filePath("summary.csv");
    QCOMPARE(write_model_csv(*page.summaryModel(), path), QString());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(file.readAll()).trimmed().split('\n');
    QCOMPARE(lines.size(), page.summaryModel()->rowCount() + 1);
    QVERIFY(lines[0].startsWith("quantity,"));
    QVERIFY(lines[1].startsWith("median_step_ms,"));
    QVERIFY(page.chart("loss")->savePng(dir_.filePath("loss.png"), 400, 300));
    QVERIFY(QFileInfo(dir_.filePath("loss.png")).size() > 1000);
  }

  // The list's Export CSV wrote every row whatever was selected, and a session's own steps and
  // series could not be exported at all: now the selected rows, and `sessions export`'s tables.
  void exportsTheSelection() {
    SessionsPage page;
    openBoth(page);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.selectByName({"beta"});
    QTableView* list = nullptr;
    for (auto* view : page.findChildren<QTableView*>())
      if (view->model() == page.filterProxy()) list = view;
    QVERIFY(list);
    QString copied_action;
    QTimer::singleShot(100, [&] {  // the list's context menu: copy the list, as it offers it
      auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
      if (!menu) return;
      for (QAction* action : menu->actions())
        if (action->text().startsWith("Copy the list")) {
          copied_action = action->text();
          action->trigger();
        }
      menu->close();
    });
    emit list->customContextMenuRequested(QPoint(5, 5));
    QCOMPARE(copied_action, QString("Copy the list as CSV (1 selected rows)"));
    const QStringList lines = QApplication::clipboard()->text().trimmed().split('\n');
    QCOMPARE(lines.size(), 2);  // the header and beta's row
    QVERIFY2(lines[1].startsWith("beta,"), qPrintable(lines[1]));

    std::vector<SessionRef> beta;
    for (int r = 0; r < page.catalogModel()->rowCount(); ++r)
      if (page.catalogModel()->row(r).info.name == "beta") beta.push_back(page.catalogModel()->ref(r));
    QCOMPARE(beta.size(), std::size_t(1));
    QTemporaryDir out;
    QSignalSpy status(&page, &SessionsPage::statusMessage);
    QCOMPARE(page.exportSessions(beta, out.path()), QString());
    QFile steps(out.filePath("steps.csv"));
    QVERIFY(steps.open(QIODevice::ReadOnly));
    const QStringList step_lines = QString::fromUtf8(steps.readAll()).trimmed().split('\n');
    QCOMPARE(step_lines.size(), 1 + 2 * 20);  // beta's 20 steps of 2 ranks, no other session's
    QVERIFY(QFileInfo::exists(out.filePath("timers.csv")));
    QVERIFY(status.last().first().toString().contains("shardscope sessions export"));
    std::vector<SessionRef> two_files = beta;  // and gamma, of the other file: the CLI reads one --db
    for (int r = 0; r < page.catalogModel()->rowCount(); ++r)
      if (page.catalogModel()->row(r).info.name == "gamma") two_files.push_back(page.catalogModel()->ref(r));
    QCOMPARE(two_files.size(), std::size_t(2));
    QVERIFY(page.exportSessions(two_files, out.path()).contains("select sessions of one file"));
  }

  void pageInMainWindowSmoke() {
    MainWindow window;
    window.show();
    QVERIFY(window.showPage("Sessions & Compare"));
    auto* page = window.findChild<SessionsPage*>();
    QVERIFY(page);
    QVERIFY(page->isVisible());
    openBoth(*page);
    page->selectByName({"alpha", "beta", "gamma"});
    QSignalSpy drawn(page, &SessionsPage::curvesDrawn);
    QApplication::setActiveWindow(&window);
    page->filterField()->setFocus();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QTest::keyClick(page->filterField(), Qt::Key_Return, Qt::ControlModifier);  // the page's Compare shortcut
    QVERIFY(drawn.wait(10000));
    QCOMPARE(page->comparison().sessions.size(), std::size_t(3));
    QVERIFY(!window.grab().isNull());
  }
};

QTEST_MAIN(SessionsPageTest)
#include "sessions_page_test.moc"
