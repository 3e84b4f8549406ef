// "These hosts" against real hosts: two network namespaces with their own OpenSSH servers
// (scripts/ci_netns.sh, as the multi-host CLI tests make them), the page's own `shardscope launch`
// run on the first (tests/gui/cli_in_netns.sh). A 2-host x 2-rank CPU run is followed live and
// labelled host:rank in the legend, the console and its filter; the preflight passes both hosts;
// a run whose ranks fail names the first as host:rank in the banner. Skipped with the reason where
// the machine forbids namespaces.

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/launch_spec.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/preflight_panel.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "tests/multihost/host_namespaces.hpp"

using namespace shardscope::gui;

class LaunchMultihostTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::unique_ptr<shardscope::test::HostNamespaces> hosts_;
  QString config_;

  LaunchSpec twoHostSpec(const QString& session, int steps) const {
    LaunchSpec s;
    s.config_path = config_.toStdString();
    s.layers = 1;
    s.hidden = 32;
    s.heads = 2;
    s.seq_len = 16;
    s.vocab = 128;
    s.processes = 2;
    s.steps = steps;
    s.session_file = session.toStdString();
    s.hostfile = hosts_->hostfile();
    s.launcher_args = "-F " + hosts_->ssh_config();
    s.master_port = 29673;
    return s;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeLaunchMultihostTest");
    QSettings().clear();
    QVERIFY(dir_.isValid());
    hosts_ = std::make_unique<shardscope::test::HostNamespaces>(2);
    if (!hosts_->skip_reason().empty()) QSKIP(hosts_->skip_reason().c_str());
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_SOURCE_DIR "/tests/gui/cli_in_netns.sh");
    qputenv("SS_GUI_CLI", SHARDSCOPE_CLI_PATH);
    qputenv("SS_GUI_NETNS", QByteArray::fromStdString(hosts_->ns(1)));
    config_ = dir_.filePath("tiny.json");
    QFile file(config_);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
                  "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}, "zero_optimization": {"stage": 2}})");
  }

  void preflightPassesBothHosts() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    page.setSpec(twoHostSpec(dir_.filePath("unused.db"), 1));
    QSignalSpy finished(page.preflight(), &PreflightPanel::finished);
    page.preflight()->run();
    QVERIFY(finished.wait(120000));
    const PreflightResult& r = page.preflight()->result();
    QVERIFY2(finished.first().first().toInt() == 0, qPrintable(page.preflight()->summary()->text()));
    QCOMPARE(r.rows.size(), std::size_t(2));
    QCOMPARE(r.rows[1].host.toStdString(), hosts_->address(2));
    QVERIFY(r.rows[0].reachable && r.rows[1].reachable && r.ok);
    QVERIFY2(r.allreduce.contains("4 rank(s)"), qPrintable(r.allreduce));
  }

  void runAcrossHostsIsLabelledHostRank() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    page.setSpec(twoHostSpec(dir_.filePath("hosts.db"), 6));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY2(page.isRunning(), qPrintable(page.banner()->text()));
    QVERIFY(finished.wait(300000));
    QVERIFY2(finished.first().first().toInt() == 0, qPrintable(page.banner()->text()));
    const std::string second = hosts_->address(2);
    const auto& ranks = page.runner()->facts().rank_hosts;
    QCOMPARE(ranks, (std::map<int, std::string>{{0, hosts_->address(1)}, {1, hosts_->address(1)}, {2, second}, {3, second}}));
    QVERIFY2(page.rankLegend()->text().contains(QString::fromStdString(second + ":3")), qPrintable(page.rankLegend()->text()));
    QTRY_COMPARE_WITH_TIMEOUT(page.plots()->pointCount("loss", 3), 6, 10000);  // the session's rows of every host
    QVERIFY(page.console()->setRankFilter("3"));
    QVERIFY(page.console()->filter()->rowCount() > 0);
    for (int r = 0; r < page.console()->filter()->rowCount(); ++r)
      QVERIFY(page.console()->filter()->index(r, 0).data().toString().startsWith(QString::fromStdString("[" + second + ":3] ")));
  }

  void failureNamesHostRank() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    LaunchSpec spec = twoHostSpec(dir_.filePath("failed.db"), 4);
    spec.data = dir_.filePath("missing-tokens.bin").toStdString();
    page.setSpec(spec);
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(finished.wait(300000));
    QVERIFY(finished.first().first().toInt() != 0);
    const QString banner = page.banner()->text();
    QVERIFY2(banner.contains(QRegularExpression(R"(\d+\.\d+\.\d+\.\d+:[0-3] failed)")), qPrintable(banner));
    QVERIFY2(banner.contains("missing-tokens.bin"), qPrintable(banner));
  }
};

QTEST_MAIN(LaunchMultihostTest)
#include "launch_multihost_test.moc"
