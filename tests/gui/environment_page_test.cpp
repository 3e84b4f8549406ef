// Offscreen smoke test: the main window opens, the Environment page runs the real CLI and shows
// the same report it prints.
#include <QSignalSpy>
#include <QTest>
#include <QTreeWidget>

#include "app/gui/environment_page.hpp"
#include "app/gui/main_window.hpp"

using shardscope::gui::EnvironmentPage;
using shardscope::gui::MainWindow;

class EnvironmentPageTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH); }

  void mainWindowShowsTheReport() {
    MainWindow window;
    QSignalSpy loaded(window.environmentPage(), &EnvironmentPage::reportLoaded);
    window.show();
    QVERIFY(loaded.wait(60000));
    QVERIFY(window.showPage("Environment"));
    QTreeWidget* tree = window.environmentPage()->tree();
    QStringList sections;
    for (int i = 0; i < tree->topLevelItemCount(); ++i) sections << tree->topLevelItem(i)->text(0);
    QCOMPARE(sections, QStringList({"Versions", "Accelerator", "Kernels", "Host", "Checks"}));
    const QString text = window.environmentPage()->reportText();
    QVERIFY(text.contains("libtorch version"));
    QVERIFY(text.contains(QString("qt version ") ));
  }

  void missingCliIsReportedNotHung() {
    qputenv("SHARDSCOPE_CLI", "/nonexistent/shardscope");
    EnvironmentPage page;
    QSignalSpy failed(&page, &EnvironmentPage::reportFailed);
    page.refresh();
    QVERIFY(failed.wait(10000));
    QVERIFY(failed.first().first().toString().contains("/nonexistent/shardscope"));
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
  }
};

QTEST_MAIN(EnvironmentPageTest)
#include "environment_page_test.moc"
