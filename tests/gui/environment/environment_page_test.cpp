// Offscreen smoke test: the main window opens, the Environment page runs the real CLI and shows
// the same report it prints; in the default window on a 1366x768 screen the Notes column (each
// check's fix) starts on screen however long a check's message is.
#include <QApplication>
#include <QSignalSpy>
#include <QTest>
#include <QHeaderView>
#include <QScrollBar>
#include <QTreeWidget>

#include "app/gui/environment/environment_page.hpp"
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
    // The window a 1366x768 screen gives: the Notes column starts inside the view, whatever the longest value.
    window.resize(1340, 700);
    QApplication::processEvents();
    auto* check = new QTreeWidgetItem(tree->topLevelItem(4), {"warning", QString("a check whose message is long ").repeated(12),
                                                               "the fix, which must be on screen"});
    tree->header()->resizeSections(QHeaderView::ResizeToContents);
    QApplication::processEvents();
    QVERIFY(check);
    const int notes = tree->header()->sectionViewportPosition(2);
    QVERIFY2(notes + 100 < tree->viewport()->width(),
             qPrintable(QString("Notes start at %1 px of a %2 px view").arg(notes).arg(tree->viewport()->width())));
    QVERIFY(tree->header()->sectionSize(1) <= EnvironmentPage::kValueColumnMaxWidth);
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
