// The run doctor's banner on Launch & Watch (issue 28 item 2): a real `shardscope launch` of 4 CPU
// ranks started by the page, rank 2 made to hang before its all-reduce at step 3 by
// SHARDSCOPE_FAULT, --hang-after 4 --on-hang stop. The banner must name vm:2 (this host), the
// all_reduce and its sequence number as the faulted rank printed them, and the step; its links
// must filter the log to rank 2 and show rank 2's curves around step 3.
#include <QComboBox>
#include <QLineEdit>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/launch/doctor_alarm.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "tests/process_helpers.hpp"

#include <unistd.h>

using namespace shardscope::gui;

namespace {

QString this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return QString::fromLocal8Bit(name);
}

}  // namespace

class LaunchDoctorBannerTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString writeConfig() const {
    const QString path = dir_.filePath("ds.json");
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
      file.write(R"({"train_micro_batch_size_per_gpu": 1, "steps_per_print": 1,
                    "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "zero_optimization": {"stage": 0}})");
    return path;
  }

  LaunchSpec hangingRun() const {
    LaunchSpec s;
    s.config_path = writeConfig().toStdString();
    s.model = "gpt2";
    s.layers = 2;
    s.hidden = 32;
    s.heads = 2;
    s.seq_len = 16;
    s.vocab = 64;
    s.processes = 4;
    s.steps = 1000;
    s.session_file = dir_.filePath("runs.db").toStdString();
    s.master_port = shardscope::test::free_port();
    s.hang_after_s = 4;
    s.stop_on_hang = true;
    return s;
  }

  // What the faulted rank printed: "rank 2 at step 3, before collective #N (all_reduce)".
  static QString faultedSequence(LaunchPage& page) {
    const QRegularExpression said("rank 2 at step 3, before collective #([0-9]+) \\(all_reduce\\)");
    const auto* model = page.console()->model();
    for (int r = 0; r < model->rowCount(); ++r) {
      const auto m = said.match(model->index(r).data().toString());
      if (m.hasMatch()) return m.captured(1);
    }
    return {};
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeDoctorBannerTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    QVERIFY(dir_.isValid());
  }

  void aHangNamesTheCulpritWithLinksToItsLogAndCurves() {
    LaunchPage page;
    page.resize(1400, 900);
    page.show();
    page.setUseEditorConfig(false);
    page.setSpec(hangingRun());
    QVERIFY(page.cliTwin()->text().contains("--hang-after 4 --on-hang stop"));
    qputenv("SHARDSCOPE_FAULT", "2:3:hang-before-collective:all_reduce");  // the launcher's ranks inherit it
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    qunsetenv("SHARDSCOPE_FAULT");
    QVERIFY(finished.wait(180000));
    QCOMPARE(finished.at(0).at(0).toInt(), 124);  // --on-hang stop
    // The alarm may come with the final read after the launcher's exit.
    QTRY_VERIFY_WITH_TIMEOUT(!page.doctorBanner().isEmpty(), 10000);
    const QString sequence = faultedSequence(page);
    QVERIFY2(!sequence.isEmpty(), "the faulted rank did not say where it hangs");
    const QString banner = page.banner()->text();
    const QString culprit = QString("culprit <b>%1:2</b>").arg(this_host());
    QVERIFY2(banner.contains("The run doctor: hang"), qPrintable(banner));
    QVERIFY2(banner.contains(culprit), qPrintable(banner));
    QVERIFY2(banner.contains("in all_reduce #" + sequence + " at step 3"), qPrintable(banner));
    QVERIFY2(banner.contains("exit code 124: the launcher stopped every rank"), qPrintable(banner));
    QVERIFY2(banner.contains("href='shardscope-log:2'"), qPrintable(banner));
    QVERIFY2(banner.contains("href='shardscope-curve:2@3'"), qPrintable(banner));

    // The log link: rank 2's lines only, the Logs tab shown.
    emit page.banner()->linkActivated("shardscope-log:2");
    QCOMPARE(page.console()->rankField()->text(), QString("2"));
    QCOMPARE(page.console()->filter()->ranks(), (std::optional<std::set<int>>(std::set<int>{2})));
    QVERIFY(page.console()->isVisible());
    // The curve link: the view paused on steps around 3, rank 2's curve bold.
    emit page.banner()->linkActivated("shardscope-curve:2@3");
    QVERIFY(!page.plots()->following());
    QCOMPARE(page.plots()->focusedRank(), 2);
    const QCPRange shown = page.plots()->chart("loss")->xAxis->range();
    QVERIFY2(shown.contains(3), qPrintable(QString("%1..%2").arg(shown.lower).arg(shown.upper)));
    QCOMPARE(page.plots()->chart("loss")->graph(2)->pen().widthF(), 3.0);
  }
};

QTEST_MAIN(LaunchDoctorBannerTest)
#include "launch_doctor_banner_test.moc"
