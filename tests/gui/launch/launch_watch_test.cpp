// "Your own command" on the Launch & Watch page: a real child command (tests/gui/fake_deepspeed.py,
// which writes csv_monitor files as DeepSpeed's csvMonitor does) run under `shardscope watch`; the
// live curves hold exactly what it wrote, the console tells the command's lines from watch's closing
// summary, the user's config stays as it was, the session is in the file, a failed command's banner
// quotes the command, and Stop ends watch, the command and the command's own child; the command
// gets the environment the page's field sets; a command not on PATH is watch's own refusal (the
// launcher's line, no step count); the empty charts' hints follow the mode before any run.

#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/launch_spec.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "app/gui/launch/session_poller.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "tests/gui/common/session_test_data.hpp"
#include "tests/process_helpers.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

constexpr const char* kConfig = R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8})";

bool gone(qint64 pid) { return shardscope::test::process_gone(static_cast<pid_t>(pid), std::chrono::milliseconds(3000)); }

}  // namespace

class LaunchWatchTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_, config_;

  /// The console's first line containing `text`, or an invalid index.
  static QModelIndex consoleRow(const LaunchPage& page, const QString& text) {
    const auto* model = page.console()->model();
    for (int r = 0; r < model->rowCount(); ++r)
      if (model->index(r).data().toString().contains(text)) return model->index(r);
    return {};
  }

  WatchSpec fakeRun(const QString& session, const QStringList& extra) const {
    WatchSpec w;
    w.command = {python_.toStdString(), SHARDSCOPE_SOURCE_DIR "/tests/gui/fake_deepspeed.py", "--deepspeed_config",
                 config_.toStdString()};
    for (const QString& a : extra) w.command.push_back(a.toStdString());
    w.session_file = session.toStdString();
    w.name = "watched";
    w.working_dir = dir_.path().toStdString();
    return w;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeLaunchWatchTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    QVERIFY(dir_.isValid());
    python_ = QStandardPaths::findExecutable("python3");
    if (python_.isEmpty()) QSKIP("no python3 on PATH for the stand-in DeepSpeed command");
    config_ = dir_.filePath("ds.json");
    QFile file(config_);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(kConfig);
  }

  void watchArguments() {
    WatchSpec w;
    w.command = split_shell_words("deepspeed train.py --deepspeed --deepspeed_config 'my ds.json'");
    w.session_file = "/s/w.db";
    w.name = "mine";
    QCOMPARE(watch_arguments(w), (std::vector<std::string>{"watch", "--db", "/s/w.db", "--name", "mine", "--grace", "5", "--",
                                                          "deepspeed", "train.py", "--deepspeed", "--deepspeed_config",
                                                          "my ds.json"}));
    LaunchPage page;
    page.setOwnCommand(true);
    page.setWatchSpec(w);
    QCOMPARE(page.watchSpec().command, w.command);
    QVERIFY2(page.cliTwin()->text().startsWith("shardscope watch --db /s/w.db --name mine --grace 5 -- deepspeed"),
             qPrintable(page.cliTwin()->text()));
    QVERIFY(page.cliTwin()->text().contains("'my ds.json'"));
    w.command.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, watch_arguments(w));
    page.setWatchSpec(w);
    page.start();
    QVERIFY(!page.isRunning());
    QVERIFY2(page.banner()->text().contains("Command: give the command"), qPrintable(page.banner()->text()));
  }

  void curvesFollowTheCommandsCsvMonitor() {
    const QString session = dir_.filePath("watch.db");
    LaunchPage page;
    page.setOwnCommand(true);
    page.setWatchSpec(fakeRun(session, {"--steps", "6", "--interval", "0.3"}));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY2(page.isRunning(), qPrintable(page.banner()->text()));
    QTRY_VERIFY_WITH_TIMEOUT(page.plots()->pointCount("loss", 0) >= 2, 30000);  // live, before the end
    QVERIFY(page.isRunning());
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().toInt(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(page.plots()->pointCount("loss", 0), 6, 10000);
    QVERIFY2(page.banner()->text().contains("Completed"), qPrintable(page.banner()->text()));
    QCPGraph* loss = page.plots()->chart("loss")->graph(0);
    for (int i = 0; i < 6; ++i) {
      QCOMPARE(loss->data()->at(i)->key, double(i + 1));  // samples / train_batch_size
      QCOMPARE(loss->data()->at(i)->value, 6.0 / (i + 1));
    }
    // DeepSpeed writes each rate after its scheduler stepped: steps 2 to 6 ran with the five it
    // wrote first; the sixth is for a step that never ran.
    QCOMPARE(page.plots()->pointCount("lr", 0), 5);
    QCOMPARE(page.plots()->chart("lr")->graph(0)->data()->at(0)->key, 2.0);
    QTRY_COMPARE_WITH_TIMEOUT(page.progress()->value(), 6, 5000);  // the bar ends at the steps the command made
    QCOMPARE(page.progress()->maximum(), 6);
    // The command's output reached the console as its own; watch's closing summary as watch's, not
    // as rank 0's; the user's config is untouched; the session is there.
    const QModelIndex step6 = consoleRow(page, "fake deepspeed: step 6");
    QVERIFY(step6.isValid());
    QCOMPARE(step6.data(RankLogModel::kRankRole).toInt(), 0);
    QVERIFY(!step6.data(RankLogModel::kSummaryRole).toBool());
    for (const char* summary : {"shardscope watch: the command ended with exit code 0", "watched  [completed]",
                                "final loss (step)", "log warnings / errors"}) {
      const QModelIndex row = consoleRow(page, summary);
      QVERIFY2(row.isValid(), summary);
      QCOMPARE(row.data(RankLogModel::kRankRole).toInt(), -1);
      QVERIFY(row.data(RankLogModel::kSummaryRole).toBool());
      QVERIFY2(row.data().toString().startsWith("[launch] "), qPrintable(row.data().toString()));
    }
    QFile file(config_);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray(kConfig));
    ss::Store store = ss::Store::open(session.toStdString(), {});
    const auto id = ss::find_session(store, page.sessionUid().toStdString());
    QCOMPARE(static_cast<int>(ss::load_steps(store, id, 0).size()), 6);
  }

  // A watched run's step row gains its loss after it was first read (lr comes in engine.step(),
  // the script's loss after it): the next poll reads the row again and the curve gets the point.
  void aStepReadAgainGetsTheLossItGainedSince() {
    const QString path = dir_.filePath("late_loss.db");
    const auto uids = testing::write_sessions(path, {testing::RunSpec{"late", 1, 12, 10, 2}});
    {
      ss::SqliteDb db(path.toStdString(), false, false);
      db.exec("UPDATE steps SET loss = NULL WHERE step > 4");  // read before the loss file was
    }
    LiveCursor cursor;
    LivePlots plots;
    LiveUpdate first = poll_session(path.toStdString(), uids[0], cursor);
    advance_cursor(cursor, first);
    plots.append(first);
    QCOMPARE(plots.pointCount("loss", 0), 4);
    QCOMPARE(plots.pointCount("lr", 0), 12);
    {
      ss::SqliteDb db(path.toStdString(), false, false);
      db.exec("UPDATE steps SET loss = 100.0 / step WHERE step > 4");  // the follower's rewrite
    }
    LiveUpdate second = poll_session(path.toStdString(), uids[0], cursor);
    advance_cursor(cursor, second);
    plots.append(second);
    QCOMPARE(plots.pointCount("loss", 0), 12);
    QCOMPARE(plots.pointCount("lr", 0), 12);  // read again, not added twice
    QCPGraph* loss = plots.chart("loss")->graph(0);
    QCOMPARE(loss->data()->at(11)->key, 12.0);
    QCOMPARE(loss->data()->at(11)->value, 100.0 / 12);
    QCOMPARE(cursor.last_step.at(0), std::int64_t{12});
  }

  // A command that fails at once: the banner quotes its last lines, not watch's summary after them.
  void aFailedCommandsBannerQuotesTheCommand() {
    LaunchPage page;
    page.setOwnCommand(true);
    page.setWatchSpec(fakeRun(dir_.filePath("failed.db"), {"--no-such-flag"}));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished.first().first().toInt(), 2);  // argparse's exit code, as the shell would report it
    const QString banner = page.banner()->text();
    QVERIFY2(banner.contains("Your command failed"), qPrintable(banner));
    QVERIFY2(banner.contains("unrecognized arguments: --no-such-flag"), qPrintable(banner));
    QVERIFY2(!banner.contains("log warnings / errors") && !banner.contains("the session it recorded"), qPrintable(banner));
    QVERIFY(consoleRow(page, "log warnings / errors").isValid());  // the summary is in the console all the same
  }

  // "Your own command" had no field for environment variables: KEY=VALUE lines reach the command
  // (a sitecustomize.py on PYTHONPATH prints what it sees), and the CLI twin is `env ... shardscope watch`.
  void theEnvironmentFieldReachesTheCommand() {
    QTemporaryDir site;
    QFile custom(site.filePath("sitecustomize.py"));
    QVERIFY(custom.open(QIODevice::WriteOnly));
    custom.write("import os, sys\nprint('sitecustomize sees SHARDSCOPE_TEST_VAR=' + os.environ.get('SHARDSCOPE_TEST_VAR', '(unset)'), flush=True)\n");
    custom.close();
    WatchSpec w = fakeRun(dir_.filePath("environment.db"), {"--steps", "1"});
    w.environment = parse_environment_lines("# for the test\nPYTHONPATH=" + site.path().toStdString() +
                                            "\n\nexport SHARDSCOPE_TEST_VAR=hello world\n");
    QCOMPARE(w.environment, (std::vector<std::string>{"PYTHONPATH=" + site.path().toStdString(), "SHARDSCOPE_TEST_VAR=hello world"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_environment_lines("A=1\nnot an assignment\n"));
    try {
      parse_environment_lines("A=1\n2BAD=x");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).startsWith("Environment: line 2 '2BAD=x'"), e.what());
    }
    LaunchPage page;
    page.setOwnCommand(true);
    page.setWatchSpec(w);
    QCOMPARE(page.watchSpec().environment, w.environment);
    QVERIFY2(page.cliTwin()->text().startsWith("env PYTHONPATH=") && page.cliTwin()->text().contains("'SHARDSCOPE_TEST_VAR=hello world' shardscope watch"),
             qPrintable(page.cliTwin()->text()));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(finished.wait(30000));
    QVERIFY2(consoleRow(page, "sitecustomize sees SHARDSCOPE_TEST_VAR=hello world").isValid(), "the command did not get the variable");
  }

  // watch's own refusal ("shardscope: watch: 'x' is not an executable on PATH") was shown as rank 0's
  // output under "step 0 of 1".
  void aCommandNotOnPathIsWatchsOwnRefusal() {
    LaunchPage page;
    page.setOwnCommand(true);
    WatchSpec w = fakeRun(dir_.filePath("missing.db"), {});
    w.command.front() = "no-such-deepspeed-4711";
    page.setWatchSpec(w);
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished.first().first().toInt(), 2);
    const QModelIndex row = consoleRow(page, "is not an executable on PATH");
    QVERIFY(row.isValid());
    QCOMPARE(row.data(RankLogModel::kRankRole).toInt(), -1);  // the launcher's, "[launch]"
    QVERIFY2(page.banner()->text().contains("did not start your command"), qPrintable(page.banner()->text()));
    QCOMPARE(page.progress()->text(), QString("no steps recorded"));
  }

  // The empty charts' hints are the chosen mode's before a run starts, not the last mode's.
  void theChartHintsFollowTheMode() {
    LaunchPage page;
    page.setOwnCommand(false);
    QVERIFY(!page.plots()->emptyNote("tokens_per_s").contains("steps_per_print"));
    page.setOwnCommand(true);
    QVERIFY2(page.plots()->emptyNote("tokens_per_s").contains("steps_per_print"), qPrintable(page.plots()->emptyNote("tokens_per_s")));
    page.setOwnCommand(false);
    QVERIFY(!page.plots()->emptyNote("tokens_per_s").contains("steps_per_print"));
  }

  void stopEndsTheWholeTree() {
    const QString pid_file = dir_.filePath("fake.pids");
    LaunchPage page;
    page.setOwnCommand(true);
    page.setWatchSpec(fakeRun(dir_.filePath("stopped.db"), {"--steps", "0", "--interval", "0.2", "--pid-file", pid_file}));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(page.isRunning());
    const qint64 watch = page.runner()->launcherPid();
    QTRY_VERIFY_WITH_TIMEOUT(page.plots()->lastStep() >= 2, 30000);
    QFile pids(pid_file);
    QVERIFY(pids.open(QIODevice::ReadOnly));
    const QList<QByteArray> both = pids.readAll().trimmed().split(' ');
    QCOMPARE(both.size(), 2);
    page.stop();
    QVERIFY(finished.wait(30000));
    QVERIFY(finished.first().first().toInt() != 0);
    QVERIFY(gone(watch));
    QVERIFY2(gone(both[0].toLongLong()), "the command is still running");
    QVERIFY2(gone(both[1].toLongLong()), "the command's child is still running");
    QVERIFY2(page.banner()->text().contains("Stopped"), qPrintable(page.banner()->text()));
  }
};

QTEST_MAIN(LaunchWatchTest)
#include "launch_watch_test.moc"
