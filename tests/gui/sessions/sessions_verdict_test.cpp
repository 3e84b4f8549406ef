// The Sessions & Compare page's Verdict and Trend tabs on sessions written by the test (the
// regression tests' synthetic runs: AR(1) step-time noise, a known +6 ms in the LayerNorm
// backward): the verdict table is check_regression's report, coloured by verdict; the interval
// chart draws each change and its interval; a double-click on a contributor opens the candidate's
// profile narrowed to that kernel (or collective); --fail-on and the repeats-by-config split re-run
// the check; the trend chart and table are metric_trend's groups with the step marked; bad input
// reads as a sentence on the tab.
#include <QHeaderView>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/profile/profile_view.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/sessions/verdict_models.hpp"
#include "sessions/regression_check.hpp"
#include "sessions/regression_trend.hpp"
#include "sessions/store.hpp"
#include "tests/sessions/regression_fixtures.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
using ss::testing::SyntheticRun;

class SessionsVerdictTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString file_;
  std::int64_t base_ = 0, slow_ = 0, base2_ = 0, slow2_ = 0;

  SessionRef ref(std::int64_t id, const std::string& name) const { return {file_.toStdString(), id, name + " #" + std::to_string(id)}; }

  static void compareAndWait(SessionsPage& page, const std::vector<SessionRef>& refs) {
    QSignalSpy ready(&page, &SessionsPage::verdictReady);
    page.compare(refs);
    QVERIFY(ready.wait(30000));
  }

  static int rowOf(const TextTableModel* model, const QString& first) {
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->index(r, 0).data().toString() == first) return r;
    return -1;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeVerdictTest");
    QSettings().clear();
    QVERIFY(dir_.isValid());
    file_ = dir_.filePath("runs.db");
    ss::Store store = ss::Store::open_or_create(file_.toStdString());
    SyntheticRun base;
    base.name = "base", base.seed = 1, base.profiled = true, base.tags = {"v1"};
    SyntheticRun slow = base;
    slow.name = "slow", slow.seed = 2, slow.layernorm_extra_ms = 6, slow.tags = {"v2"};
    slow.config_json = R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1})";
    slow.started_at += 3600;
    base_ = ss::testing::write_synthetic_run(store, base);
    slow_ = ss::testing::write_synthetic_run(store, slow);
    base.seed = 3, base.started_at += 7200;
    slow.seed = 4, slow.started_at += 7200;
    base2_ = ss::testing::write_synthetic_run(store, base);
    slow2_ = ss::testing::write_synthetic_run(store, slow);
  }

  void verdictTableIsTheCheck() {
    SessionsPage page;
    compareAndWait(page, {ref(base_, "base"), ref(slow_, "slow")});
    const VerdictView& v = page.verdict();
    QVERIFY2(v.error.empty(), v.error.c_str());
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    const ss::RegressionReport lib = ss::check_regression(store, {base_}, {slow_});
    TextTableModel* model = page.verdictModel();
    QCOMPARE(model->rowCount(), static_cast<int>(lib.metrics.size()));
    QCOMPARE(model->headerData(4, Qt::Horizontal, Qt::DisplayRole).toString(), QString("95% interval"));
    for (int r = 0; r < model->rowCount(); ++r) {
      const auto& m = lib.metrics[static_cast<std::size_t>(r)];
      QCOMPARE(model->index(r, 3).data(TextTableModel::kValueRole).toDouble(), m.change.estimate);
      QCOMPARE(model->index(r, 4).data(TextTableModel::kValueRole).toDouble(), m.change.low);
      QCOMPARE(model->index(r, 6).data().toString().toStdString(), verdict_text(m.verdict, m.gating));
    }
    const int step = rowOf(model, "step_time (ms)");
    QVERIFY(step >= 0);
    QCOMPARE(model->index(step, 6).data().toString(), QString("REGRESSION"));
    QCOMPARE(model->index(step, 0).data(Qt::BackgroundRole).value<QColor>(), tone_background(RowTone::kRegression));
    QCOMPARE(model->index(step, 6).data(Qt::ForegroundRole).value<QColor>(), tone_color(RowTone::kRegression));
    QVERIFY(model->index(step, 6).data(Qt::FontRole).value<QFont>().bold());
    const int forward = rowOf(model, "phase:forward (ms)");
    QVERIFY(forward >= 0);
    QVERIFY(model->index(forward, 6).data().toString() != "REGRESSION");
    QVERIFY(page.verdictHeadline()->text().contains("FAILED: step_time +"));
    QVERIFY(page.verdictHeadline()->text().contains("layer_norm_grad_input_kernel"));
    auto* cli = page.findChild<QLabel*>("verdict_cli");
    QVERIFY(cli->text().startsWith("shardscope sessions check --db "));
    // The interval chart: per metric a point at its change (percent) with the interval as error bars.
    QCustomPlot* chart = page.verdictChart();
    const auto& m = lib.metrics[static_cast<std::size_t>(step)];
    bool drawn = false;
    for (int g = 1; g < chart->graphCount(); ++g) {
      const auto* data = chart->graph(g)->data().data();
      if (data->size() == 1 && std::abs(data->at(0)->key - 100 * m.change.estimate) < 1e-9) {
        drawn = true;
        QCOMPARE(chart->graph(g)->scatterStyle().pen().color(), tone_color(RowTone::kRegression));
      }
    }
    QVERIFY(drawn);
    QCOMPARE(chart->graph(0)->data()->size(), static_cast<int>(lib.metrics.size()));  // a threshold mark per metric
    // What changed: the config the runs differ in.
    TextTableModel* changes = page.changesModel();
    bool accumulation = false;
    for (int r = 0; r < changes->rowCount(); ++r)
      accumulation = accumulation || changes->index(r, 1).data().toString() == "gradient_accumulation_steps";
    QVERIFY(accumulation);
  }

  void contributorOpensTheProfileNarrowedToIt() {
    SessionsPage page;
    compareAndWait(page, {ref(base_, "base"), ref(slow_, "slow")});
    TextTableModel* contributors = page.contributorsModel();
    QVERIFY(contributors->rowCount() > 3);
    QCOMPARE(contributors->index(0, 1).data().toString(), QString("at::native::layer_norm_grad_input_kernel"));
    QCOMPARE(contributors->index(0, 4).data(TextTableModel::kValueRole).toDouble(), page.verdict().report.contributors[0].delta_ms);
    auto* tabs = page.findChild<QTabWidget*>();
    QSignalSpy analysed(page.profileView(), &ProfileView::selectionAnalysed);
    page.showTab("Verdict");
    // A real double-click on the first row, as a user would.
    QTableView* view = nullptr;
    for (auto* v : page.findChildren<QTableView*>())
      if (v->model() == contributors) view = v;
    QVERIFY(view);
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    for (QWidget* w = view; w; w = w->parentWidget())
      if (auto* inner = qobject_cast<QTabWidget*>(w); inner && inner != tabs) inner->setCurrentWidget(inner->widget(0));
    const QRect cell = view->visualRect(contributors->index(0, 1));
    // The press that selects the row, then the double-click (QAbstractItemView opens on the pressed index).
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, cell.center());
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, cell.center());
    QVERIFY(analysed.wait(20000));
    QCOMPARE(tabs->tabText(tabs->currentIndex()), QString("Profile"));
    QCOMPARE(page.profileView()->data()->session.id, slow_);  // the candidate's profile
    QCOMPARE(page.profileView()->selection().kernel,
             std::string("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*, int)"));
    QTabWidget* panes = page.profileView()->panes();
    QCOMPARE(panes->tabText(panes->currentIndex()).remove('&'), QString("Top kernels"));
    // The NCCL family opens the baseline's profile on its collective.
    int nccl = -1;
    for (int r = 0; r < contributors->rowCount(); ++r)
      if (contributors->index(r, 1).data().toString() == "nccl:AllReduce") nccl = r;
    QVERIFY(nccl >= 0);
    page.openContributor(nccl, true);
    QTRY_VERIFY_WITH_TIMEOUT(page.profileView()->data()->session.id == base_ && !page.profileView()->selection().empty(), 20000);
    QCOMPARE(page.profileView()->selection().collective, std::string("all_reduce"));
    QCOMPARE(panes->tabText(panes->currentIndex()).remove('&'), QString("Collectives"));
  }

  void failOnAndRepeatsRerunTheCheck() {
    SessionsPage page;
    compareAndWait(page, {ref(base_, "base"), ref(base2_, "base"), ref(slow_, "slow"), ref(slow2_, "slow")});
    QCOMPARE(page.verdictChoices().size(), std::size_t(4));  // each against the first, then 2 vs 2 by config
    QCOMPARE(page.verdict().request.candidate.front().id, base2_);
    QVERIFY(!page.verdict().report.failed);  // a repeat of the baseline
    {
      QSignalSpy ready(&page, &SessionsPage::verdictReady);
      page.setVerdictGroups(3);
      QVERIFY(ready.wait(30000));
    }
    const VerdictView& v = page.verdict();
    QCOMPARE(v.request.baseline.size(), std::size_t(2));
    QCOMPARE(v.request.candidate.size(), std::size_t(2));
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    const ss::RegressionReport lib = ss::check_regression(store, {base_, base2_}, {slow_, slow2_});
    QCOMPARE(page.verdictModel()->index(0, 3).data(TextTableModel::kValueRole).toDouble(), lib.metrics[0].change.estimate);
    QVERIFY(v.report.failed);
    {
      QSignalSpy ready(&page, &SessionsPage::verdictReady);
      page.setFailOn("peak_memory:+2%");  // only memory gates: the slowdown is reported, not failed
      QVERIFY(ready.wait(30000));
    }
    QVERIFY(!page.verdict().report.failed);
    QVERIFY(page.verdictHeadline()->text().contains("OK: no gating metric regressed"));
    QVERIFY(page.findChild<QLabel*>("verdict_cli")->text().contains("--fail-on 'peak_memory:+2%'"));
    {
      QSignalSpy ready(&page, &SessionsPage::verdictReady);
      page.setFailOn("throughput:+3%");  // the wrong direction for throughput
      QVERIFY(ready.wait(30000));
    }
    QVERIFY(page.verdictHeadline()->text().startsWith("<b>No verdict:</b>"));
    QVERIFY(page.verdictHeadline()->text().contains("throughput"));
    QCOMPARE(page.verdictModel()->rowCount(), 0);
  }

  void oneSessionHasNoVerdict() {
    SessionsPage page;
    QSignalSpy drawn(&page, &SessionsPage::comparisonReady);
    page.compare({ref(base_, "base")});
    QVERIFY(drawn.wait(20000));
    QVERIFY(page.verdictChoices().empty());
    QVERIFY(page.verdictHeadline()->text().contains("Compare 2 sessions or more"));
  }

  void trendChartIsTheLibrarysTrend() {
    SessionsPage page;
    compareAndWait(page, {ref(base_, "base"), ref(slow_, "slow")});
    QSignalSpy ready(&page, &SessionsPage::trendReady);
    page.showTrend("step_time", ss::TrendGrouping::kTag);
    QVERIFY(ready.wait(30000));
    const TrendView& t = page.trend();
    QVERIFY2(t.error.empty(), t.error.c_str());
    ss::Store store = ss::Store::open(file_.toStdString(), {});
    ss::TrendOptions options;
    options.grouping = ss::TrendGrouping::kTag;
    const ss::TrendReport lib = ss::metric_trend(store, "step_time", options);
    QCOMPARE(page.trendModel()->rowCount(), 2);  // v1 (two base runs), v2 (two slow runs)
    QCOMPARE(page.trendModel()->index(0, 0).data().toString(), QString("v1"));
    QCOMPARE(page.trendModel()->index(1, 2).data(TextTableModel::kValueRole).toDouble(), lib.groups[1].value.estimate);
    QCOMPARE(page.trendModel()->index(1, 6).data().toString(), QString("REGRESSION"));
    QCustomPlot* chart = page.trendChart();
    QCOMPARE(chart->graph(0)->data()->size(), 2);
    QCOMPARE(chart->graph(0)->data()->at(1)->value, lib.groups[1].value.estimate);
    QCOMPARE(chart->graph(1)->data()->size(), 1);  // the step, marked red at v2
    QCOMPARE(chart->graph(1)->data()->at(0)->key, 1.0);
    QCOMPARE(chart->graph(2)->data()->size(), 0);
    QCOMPARE(chart->yAxis->label(), QString("step_time (ms)"));
    QVERIFY(page.findChild<QLabel*>("trend_cli")->text().contains("sessions trend step_time --db"));
    QSignalSpy again(&page, &SessionsPage::trendReady);
    page.showTrend("phase:backward", ss::TrendGrouping::kSession, "v2");
    QVERIFY(again.wait(30000));
    QCOMPARE(page.trendModel()->rowCount(), 2);  // the two slow runs
    QSignalSpy bad(&page, &SessionsPage::trendReady);
    page.showTrend("no_such_metric", ss::TrendGrouping::kTag);
    QVERIFY(bad.wait(30000));
    QVERIFY(page.findChild<QLabel*>("trend_notes")->text().contains("No trend"));
  }
};

QTEST_MAIN(SessionsVerdictTest)
#include "sessions_verdict_test.moc"
