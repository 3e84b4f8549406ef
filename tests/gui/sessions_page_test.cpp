// The Sessions & Compare page on sessions written by the test: the list and its filter, a
// comparison of 2 sessions whose tables hold exactly what the sessions library computes, the same
// comparison across two files, smoothing and downsampling of curves, the profile view against the
// profiler's analyses, CSV export, and the page inside the main window.
#include <chrono>
#include <cmath>

#include <QSettings>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>
#include <qcustomplot.h>

#include "app/gui/compare_data.hpp"
#include "app/gui/compare_table_models.hpp"
#include "app/gui/gui_export.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/profile_timeline.hpp"
#include "app/gui/profile_view.hpp"
#include "app/gui/rows_table_model.hpp"
#include "app/gui/series_downsampling.hpp"
#include "app/gui/session_catalog_model.hpp"
#include "app/gui/sessions_page.hpp"
#include "profiler/profile_analyses.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/gui/session_test_data.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

class SessionsPageTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_a_, file_b_;

  static ss::Store reader(const QString& path) { return ss::Store::open(path.toStdString(), {}); }

  void openBoth(SessionsPage& page) {
    QSignalSpy loaded(&page, &SessionsPage::catalogLoaded);
    page.openFiles({file_a_, file_b_});
    QVERIFY(loaded.wait(10000));
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
    beta.config_json = R"({"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}})";
    beta.started_at += 3600;
    beta.profiled = true;
    testing::write_sessions(file_a_, {alpha, beta});
    testing::RunSpec gamma{"gamma", 1, 10, 120, 9};
    gamma.host = "node-b";
    gamma.started_at += 7200;
    testing::write_sessions(file_b_, {gamma});
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

  void profileViewShowsTimelineAndAnalyses() {
    SessionsPage page;
    openBoth(page);
    page.selectByName({"beta"});
    ProfileView* view = page.profileView();
    QSignalSpy loaded(view, &ProfileView::profileLoaded);
    page.profileSelected();
    QVERIFY(loaded.wait(10000));
    const auto data = view->data();
    QVERIFY2(data->error.empty(), data->error.c_str());
    // Per rank: stream 7 (kernels, memcpy), stream 13 (NCCL), NVTX levels 0 and 1.
    QCOMPARE(data->rows.size(), std::size_t(8));
    QCOMPARE(data->items, std::size_t(2 * (5 + 3)));
    QCOMPARE(data->rows[0].label, std::string("rank 0 \u00b7 GPU 0 \u00b7 stream 7"));
    QCOMPARE(data->rows[1].items[0].kind, TimelineKind::kCollective);
    QCOMPARE(data->rows[2].items.size(), std::size_t(1));  // "step" alone on level 0
    QCOMPARE(data->rows[3].items.size(), std::size_t(2));  // forward, backward nested in it
    // The top kernels table is the profiler's analysis, row for row.
    ss::Store store = reader(file_a_);
    const auto ref = shardscope::profiler::analyze_session(store, ss::find_session(store, "beta"));
    auto* kernels = view->kernelsModel();
    QCOMPARE(kernels->rowCount(), static_cast<int>(ref.top_kernels[0].kernels.size() + ref.top_kernels[1].kernels.size()));
    QCOMPARE(kernels->index(0, 1).data().toString().toStdString(), ref.top_kernels[0].kernels[0].name);
    QCOMPARE(kernels->index(0, 3).data(RowsTableModel::kSortRole).toDouble(), ref.top_kernels[0].kernels[0].total_ms);
    QCOMPARE(kernels->index(0, 3).data(RowsTableModel::kSortRole).toDouble(), 0.08);  // 2 x 40 us sgemm
    QCOMPARE(view->collectivesModel()->rowCount(), 1);
    QCOMPARE(view->collectivesModel()->index(0, 1).data(RowsTableModel::kSortRole).toLongLong(), 40);  // 20 steps x 2 ranks
    QVERIFY(view->analysesText().contains("== Slowest rank per step =="));
    QVERIFY(view->analysesText().contains("== GPU idle time in the profiled window =="));
    QCOMPARE(view->overlapModel()->rowCount(), 2);
    // Timeline: a hover finds the sgemm, the wheel zooms around the cursor, a drag pans.
    ProfileTimeline* timeline = view->timeline();
    timeline->resize(1000, 300);
    timeline->setViewRange(1'000'000, 1'100'000);
    const int x = static_cast<int>(timeline->xOf(1'020'000));
    const int y = ProfileTimeline::kRulerHeight + ProfileTimeline::kRowHeight / 2;
    auto hit = timeline->itemAt({x, y});
    QVERIFY(hit);
    QVERIFY(timeline->describe(*hit->second).contains("ampere_sgemm_128x64"));
    QVERIFY(timeline->describe(*hit->second).contains("40.0 us"));
    const double anchor = timeline->timeAt(x);
    QWheelEvent wheel(QPointF(x, y), timeline->mapToGlobal(QPointF(x, y)), {}, {0, 240}, Qt::NoButton, {},
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    QVERIFY(std::fabs((timeline->viewEnd() - timeline->viewStart()) - 100'000 / 1.5625) < 1);
    QVERIFY(std::fabs(timeline->timeAt(x) - anchor) < 1);
    const double before = timeline->viewStart();
    QTest::mousePress(timeline, Qt::LeftButton, {}, {x, y});
    QTest::mouseMove(timeline, {x - 100, y});
    QTest::mouseRelease(timeline, Qt::LeftButton, {}, {x - 100, y});
    QVERIFY(timeline->viewStart() > before);
    // Zoomed out fully, boxes narrower than a pixel are merged.
    timeline->resetZoom();
    QVERIFY(!timeline->grab().isNull());  // paints even when not shown
    QVERIFY(timeline->lastPaintedBoxes() > 0);
    QVERIFY(timeline->lastPaintedBoxes() <= data->items);
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
