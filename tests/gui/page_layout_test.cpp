// Every page of the window at the sizes two common screens give it, 1366x768 and 1920x1080, with
// real content (the CLI's environment report, an estimate, a config, a run's live charts, two
// compared sessions and a profile): no label, button or group title is cut, and no chart has tick
// labels that repeat, run into each other or (on a step axis) fall between integer steps. The
// sweep walks widths from the window's minimum up, as the breakdown legend's test does.

#include <cmath>

#include <QApplication>
#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/environment/environment_page.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/launch/hostfile_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/launch/preflight_panel.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "estimator/estimate_request.hpp"
#include "tests/gui/common/chart_checks.hpp"
#include "tests/gui/common/session_test_data.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

const char* const kPages[] = {"Environment", "Estimator", "Config Editor", "Launch & Watch", "Sessions & Compare", "Tune"};
const std::initializer_list<const char*> kSessionTabs = {"Curves", "Summary", "Breakdown", "Run", "Config diff",
                                                         "Environment", "Profile", "Verdict", "Trend"};
const std::initializer_list<const char*> kNoTabs = {""};

/// A 2-rank engine run of `steps` steps with the timers of wall_clock_breakdown, as the poller brings it.
LiveUpdate live_run(int first, int steps) {
  LiveUpdate update;
  for (int rank = 0; rank < 2; ++rank)
    for (int step = first; step < first + steps; ++step) {
      ss::StepMetrics m;
      m.rank = rank;
      m.step = step;
      m.loss = 6.0 / step;
      m.lr = 2e-3 * std::min(1.0, step / 20.0);
      m.grad_norm = 1.5 / std::sqrt(double(step));
      m.step_time_ms = 20.0 + rank;
      m.tokens_per_s = 4000.0 + step;
      m.mem_allocated_bytes = (3 << 20) + step * 4096;
      update.steps.push_back(m);
    }
  for (int step = first; step < first + steps; ++step)
    update.timers.push_back({0, step, {{"forward", 6.0}, {"backward", 9.0}, {"step", 3.0}}});
  return update;
}

}  // namespace

class PageLayoutTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::unique_ptr<MainWindow> window_;

  /// Every page at `size`: the problems found, "" when none.
  QString problemsAt(QSize size) {
    window_->resize(size);
    QString all;
    for (const char* title : kPages) {
      window_->showPage(title);
      const bool sessions = QString(title) == "Sessions & Compare";
      for (const char* tab : sessions ? kSessionTabs : kNoTabs) {
        if (sessions) window_->findChild<SessionsPage*>()->showTab(tab);
        QApplication::processEvents();
        QWidget* page = window_->centralWidget();
        for (const QString& problem : {testing::clipped_text(page), testing::chart_problems(page)})
          if (!problem.isEmpty())
            all += QString("\n  %1%2 at %3x%4: %5").arg(title, *tab ? QString(" > ") + tab : QString())
                       .arg(size.width()).arg(size.height()).arg(problem);
      }
    }
    return all;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopePageLayoutTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    window_ = std::make_unique<MainWindow>();
    QSignalSpy report(window_->environmentPage(), &EnvironmentPage::reportLoaded);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(report.wait(60000));
    // The Estimator sizes GPT-2 from its config.json.
    auto* estimator = window_->findChild<EstimatorPage*>();
    QSignalSpy estimated(estimator, &EstimatorPage::estimateUpdated);
    QVERIFY(window_->openPaths({QString(SHARDSCOPE_SOURCE_DIR) + "/tests/estimator/data/hf/gpt2.json"}).isEmpty());
    QVERIFY(estimated.wait(20000));
    // Launch & Watch holds a resumed run's live curves (steps 22 to 141) and the preflight of two
    // hosts no resolver knows (each problem and its fix in full under the table).
    LaunchPage* launch = window_->launchPage();
    launch->plots()->append(live_run(22, 120));
    const QString hostfile = dir_.filePath("hostfile");
    QFile hosts(hostfile);
    QVERIFY(hosts.open(QIODevice::WriteOnly));
    hosts.write("worker-0.invalid slots=2\nworker-1.invalid slots=2\n");
    hosts.close();
    launch->setWhere(2);
    QVERIFY(launch->hostfileEditor()->openFile(hostfile));
    QSignalSpy preflight(launch->preflight(), &PreflightPanel::finished);
    launch->preflight()->run();
    QVERIFY(preflight.wait(60000));
    // Sessions & Compare: two sessions compared, then one's profile.
    const QString db = dir_.filePath("runs.db");
    testing::RunSpec a{"zero-1 lr 2e-3", 2, 120, 100, 8}, b{"zero-2 lr 6e-4", 2, 120, 80, 6};
    b.started_at += 3600;
    b.profiled = true;
    testing::write_sessions(db, {a, b});
    auto* sessions = window_->findChild<SessionsPage*>();
    QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
    sessions->openFiles({db});
    QVERIFY(loaded.wait(10000));
    QSignalSpy drawn(sessions, &SessionsPage::curvesDrawn);
    sessions->compare({sessions->catalogModel()->ref(0), sessions->catalogModel()->ref(1)});
    QVERIFY(drawn.wait(20000));
    QSignalSpy profiled(sessions->profileView(), &ProfileView::profileLoaded);
    for (int r = 0; r < sessions->catalogModel()->rowCount(); ++r)
      if (sessions->catalogModel()->row(r).info.name == b.name) sessions->profile(sessions->catalogModel()->ref(r));
    QVERIFY(profiled.wait(20000));
  }

  void theDefaultWindowOfEachScreen() {
    for (QSize screen : {QSize(1366, 768), QSize(1920, 1080)}) {
      const QString problems = problemsAt(screen - QSize(16, 48));  // less the window manager's frame
      QVERIFY2(problems.isEmpty(), qPrintable(problems));
    }
  }

  // From the window's minimum width to 1920 in 40 px steps, at the heights of the two screens.
  void everyWidthBetween() {
    const int minimum = window_->minimumSizeHint().width();
    QString problems;
    for (int height : {720, 1032})
      for (int width = minimum; width <= 1920; width += 40) problems += problemsAt(QSize(width, height));
    QVERIFY2(problems.isEmpty(), qPrintable(problems));
  }
};

QTEST_MAIN(PageLayoutTest)
#include "page_layout_test.moc"
