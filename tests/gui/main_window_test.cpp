// The window as a user first meets it (offscreen; tests/gui/x11_window_test.sh repeats the crash
// and size cases under a real X server): quitting while the Environment report loads, finding the
// CLI in the build tree, a window and sidebar that fit small screens, a failed launch's long
// banner that does not widen the window, a saved oversized geometry fitted back, files given on
// the command line opening on their pages, closing on a running job asking first, and every
// keyboard shortcut docs/gui.md names working (Help lists them; Save As had no key under openbox).

#include <QApplication>
#include <QDialog>
#include <QFileDialog>
#include <QMenuBar>
#include <QRegularExpression>
#include <QTableWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/environment/environment_page.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/sessions/import_dialog.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/common/code_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "tests/gui/common/session_test_data.hpp"
#include "tests/process_helpers.hpp"

using namespace shardscope::gui;

namespace {

bool alive(qint64 pid) { return !shardscope::test::process_gone(static_cast<pid_t>(pid), std::chrono::milliseconds(50)); }

QString write_script(const QTemporaryDir& dir, const QString& name, const QByteArray& body) {
  const QString path = dir.filePath(name);
  QFile file(path);
  file.open(QIODevice::WriteOnly);
  file.write("#!/bin/sh\n" + body);
  file.close();
  file.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

/// Answers the next message box with `button` once it is shown.
void answer_next_message_box(QMessageBox::StandardButton button) {
  QTimer::singleShot(0, [button] {
    auto attempt = std::make_shared<std::function<void()>>();
    *attempt = [attempt, button] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
        box->button(button)->click();
        return;
      }
      QTimer::singleShot(20, *attempt);
    };
    (*attempt)();
  });
}

/// Closes the next modal file dialog once it shows, keeping its title.
void close_next_file_dialog(QString* title) {
  auto attempt = std::make_shared<std::function<void()>>();
  *attempt = [attempt, title] {
    if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
      *title = dialog->windowTitle();
      dialog->reject();
      return;
    }
    QTimer::singleShot(20, *attempt);
  };
  QTimer::singleShot(0, *attempt);
}

/// The keys docs/gui.md names ("Ctrl+Shift+S", "Ctrl+.", "Esc"), not mouse gestures ("Shift+drag").
QList<QKeySequence> documented_keys() {
  QFile docs(QString(SHARDSCOPE_SOURCE_DIR) + "/docs/gui.md");
  if (!docs.open(QIODevice::ReadOnly)) return {};
  const QString text = QString::fromUtf8(docs.readAll());
  static const QRegularExpression kKeys(R"((?<![\w-])((?:Ctrl\+|Shift\+|Alt\+)+(?:[A-Z0-9.]|Return|Enter|Tab|F\d+)|F\d+|Esc)(?![\w+]))");
  QList<QKeySequence> keys;
  for (auto it = kKeys.globalMatch(text); it.hasNext();) {
    QString key = it.next().captured(1);
    if (key == "Esc") key = "Escape";
    const QKeySequence sequence(key, QKeySequence::PortableText);
    if (!keys.contains(sequence)) keys << sequence;
  }
  return keys;
}

/// Actions and buttons of `window` that `keys` reaches.
int holders_of(const QWidget& window, const QKeySequence& keys) {
  int holders = 0;
  for (const QAction* action : window.findChildren<QAction*>()) holders += action->shortcuts().contains(keys);
  for (const QAbstractButton* button : window.findChildren<QAbstractButton*>()) holders += button->shortcut() == keys;
  return holders;
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString slow_cli_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeMainWindowTest");
    QSettings().clear();
    // A CLI that never answers: the Environment report is still loading when the window quits.
    slow_cli_ = write_script(dir_, "slow_cli", "exec sleep 60\n");
    qputenv("SHARDSCOPE_CLI", slow_cli_.toUtf8());
  }

  void quitWhileTheEnvironmentReportLoads() {
    auto* window = new MainWindow;
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window));
    EnvironmentPage* environment = window->environmentPage();
    QTRY_VERIFY(environment->isLoading());
    const qint64 child = environment->processId();
    QVERIFY(child > 0 && alive(child));
    // Ctrl+Q is File > Quit: the window closes, then goes away with the report's process running.
    QApplication::setActiveWindow(window);
    QVERIFY(QTest::qWaitForWindowActive(window));
    QTest::keyClick(window, Qt::Key_Q, Qt::ControlModifier);
    QTRY_VERIFY(!window->isVisible());
    delete window;  // used to crash: ~QProcess -> finished -> onFinished on a deleted button
    QVERIFY(shardscope::test::process_gone(static_cast<pid_t>(child), std::chrono::seconds(5)));
  }

  void findsTheCliInTheBuildTree() {
    // build/app/gui/shardscope-gui runs build/app/cli/shardscope, as scripts/run.sh starts it.
    QTemporaryDir build;
    QDir().mkpath(build.filePath("app/gui"));
    QDir().mkpath(build.filePath("app/cli"));
    qunsetenv("SHARDSCOPE_CLI");
    const CliLocation missing = locate_shardscope_cli(build.filePath("app/gui"));
    QVERIFY(missing.looked_at.contains(build.filePath("app/gui/shardscope")));
    QVERIFY(missing.looked_at.contains(build.filePath("app/cli/shardscope")));
    if (missing.path.isEmpty())  // no shardscope on PATH either: the message names every place
      QVERIFY(cli_missing_message("shardscope", "No such file", missing).contains(build.filePath("app/cli/shardscope")));
    QDir cli_dir(build.filePath("app/cli"));
    write_script(build, "app/cli/shardscope", "exit 0\n");
    const CliLocation found = locate_shardscope_cli(build.filePath("app/gui"));
    QCOMPARE(found.path, cli_dir.filePath("shardscope"));
    // $SHARDSCOPE_CLI wins and is named when it cannot run.
    qputenv("SHARDSCOPE_CLI", "/nonexistent/shardscope");
    QVERIFY(locate_shardscope_cli(build.filePath("app/gui")).path.isEmpty());
    QVERIFY(cli_missing_message("/nonexistent/shardscope", "No such file").contains("SHARDSCOPE_CLI"));
    qputenv("SHARDSCOPE_CLI", slow_cli_.toUtf8());
  }

  void theWindowFitsSmallScreensAndTheSidebarIsWhole() {
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // A 1366x768 screen leaves about 1366x700 for a window: every page fits well inside it.
    const QSize minimum = window.minimumSizeHint().expandedTo(window.minimumSize());
    qInfo("minimum window size %dx%d", minimum.width(), minimum.height());
    QVERIFY2(minimum.width() <= 1100 && minimum.height() <= 660,
             qPrintable(QString("minimum %1x%2").arg(minimum.width()).arg(minimum.height())));
    for (const char* page : {"Environment", "Estimator", "Config Editor", "Launch & Watch", "Sessions & Compare", "Tune"}) {
      QVERIFY(window.showPage(page));
      const QSize m = window.minimumSizeHint();
      qInfo("%s: minimum %dx%d", page, m.width(), m.height());
      QVERIFY2(m.width() <= 1100 && m.height() <= 660, qPrintable(QString("%1: %2x%3").arg(page).arg(m.width()).arg(m.height())));
    }
    QListWidget* list = window.pageList();
    for (int i = 0; i < list->count(); ++i) {
      const QRect text = list->visualItemRect(list->item(i));
      const int needed = list->fontMetrics().horizontalAdvance(list->item(i)->text());
      QVERIFY2(text.width() >= needed && list->viewport()->width() >= needed,
               qPrintable(list->item(i)->text() + " is cut"));
    }
  }

  void aFailedLaunchsLongBannerDoesNotWidenTheWindow() {
    const QString failing = write_script(dir_, "failing_cli",
                                         "printf 'shardscope launch: error: /no/such/%03000d.bin: cannot open\\n' 0 >&2\n"
                                         "exit 2\n");
    qputenv("SHARDSCOPE_CLI", failing.toUtf8());
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.showPage("Launch & Watch"));
    const int width = window.width(), minimum = window.minimumSizeHint().width();
    LaunchPage* page = window.launchPage();
    QSignalSpy finished(page, &LaunchPage::runFinished);
    page->start();
    QVERIFY(finished.wait(20000));
    QApplication::processEvents();
    QVERIFY2(page->banner()->text().contains("cannot open"), qPrintable(page->banner()->text().left(300)));
    QCOMPARE(window.width(), width);
    QVERIFY(window.minimumSizeHint().width() <= minimum);
    // The same CLI failed the Environment report with that line: no page took its width either.
    QTRY_VERIFY(!window.environmentPage()->isLoading());
    QCOMPARE(window.width(), 1200);
    QVERIFY2(window.minimumSizeHint().width() <= 1100, qPrintable(QString::number(window.minimumSizeHint().width())));
    QVERIFY(page->banner()->width() <= window.width());
    qputenv("SHARDSCOPE_CLI", slow_cli_.toUtf8());
  }

  void aSavedGeometryLargerThanTheScreenIsFitted() {
    const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
    {
      MainWindow wide;
      wide.setMinimumSize(0, 0);
      wide.resize(screen.width() * 3, screen.height());
      wide.show();
      QVERIFY(QTest::qWaitForWindowExposed(&wide));
      QSettings().setValue("window/geometry", wide.saveGeometry());
    }
    MainWindow window;
    QVERIFY2(window.width() <= std::max(screen.width(), window.minimumSizeHint().width()),
             qPrintable(QString("restored %1 px on a %2 px screen").arg(window.width()).arg(screen.width())));
    QSettings().remove("window/geometry");
  }

  void filesOnTheCommandLineOpenOnTheirPages() {
    const QString db = dir_.filePath("runs.db");
    testing::write_sessions(db, {testing::RunSpec{"cli-opened", 1, 5, 100, 5}});
    const QString source = SHARDSCOPE_SOURCE_DIR;
    MainWindow window;
    window.show();
    auto* sessions = window.findChild<SessionsPage*>();
    QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
    const QStringList errors = window.openPaths({db, source + "/configs/templates/zero3_cpu_offload.json",
                                                 dir_.filePath("missing.db")});
    QCOMPARE(errors.size(), 1);
    QVERIFY(errors[0].contains("missing.db") && errors[0].contains("no such file"));
    QVERIFY(loaded.wait(10000));
    QCOMPARE(sessions->catalogModel()->rowCount(), 1);
    QCOMPARE(sessions->catalogModel()->row(0).info.name, std::string("cli-opened"));
    auto* editor = window.findChild<ConfigEditorPage*>();
    QVERIFY(editor->filePath().endsWith("zero3_cpu_offload.json"));
    QVERIFY(window.openPaths({source + "/tests/estimator/data/hf/gpt2.json"}).isEmpty());
    QVERIFY(window.findChild<EstimatorPage*>()->request().hf_config.find("gpt2.json") != std::string::npos);
  }

  // Every key docs/gui.md names is in the table Help > Keyboard shortcuts lists, and each entry
  // of the table is held by an action or a button of the window (never a platform's standard key:
  // QKeySequence::SaveAs is empty outside GNOME and KDE, so Ctrl+Shift+S did nothing there).
  void everyDocumentedShortcutIsInTheTableAndHeld() {
    const QList<QKeySequence> documented = documented_keys();
    QVERIFY(documented.size() >= 12);
    QList<QKeySequence> table;
    for (const auto& s : keyboard_shortcuts()) table << s.keys;
    for (const QKeySequence& keys : documented)
      QVERIFY2(table.contains(keys), qPrintable(keys.toString() + " is in docs/gui.md but not in keyboard_shortcuts()"));
    MainWindow window;
    for (const auto& s : keyboard_shortcuts())
      QVERIFY2(holders_of(window, s.keys) >= 1, qPrintable(s.keys.toString() + " (" + s.action + ") reaches nothing"));
    QCOMPARE(holders_of(window, QKeySequence(Qt::Key_F5)), 1);  // the button had it too: ambiguous, neither fired
    QCOMPARE(holders_of(window, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)), 1);
    // Help lists the table.
    QAction* help = nullptr;
    for (QAction* action : window.menuBar()->actions())
      if (action->menu() && action->text() == "&Help")
        for (QAction* item : action->menu()->actions())
          if (item->text() == "&Keyboard shortcuts") help = item;
    QVERIFY(help);
    help->trigger();
    auto* dialog = window.findChild<QDialog*>();
    QVERIFY(dialog && dialog->isVisible());
    auto* view = dialog->findChild<QTableWidget*>();
    QCOMPARE(view->rowCount(), int(keyboard_shortcuts().size()));
    QStringList listed;
    for (int r = 0; r < view->rowCount(); ++r) listed << view->item(r, 0)->text();
    QVERIFY(listed.contains(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S).toString(QKeySequence::NativeText)));
    dialog->close();
  }

  // The keys pressed in the window, where they work: pages, Save As and Open, undo and redo,
  // the environment's refresh, Import, Compare, Profile, Esc in the profile view, Start and Stop.
  void everyShortcutDoesItsJob() {
    const QString running = write_script(dir_, "running_cli2", "echo 'shardscope launch: starting 2 rank(s)'\nexec sleep 120\n");
    qputenv("SHARDSCOPE_CLI", running.toUtf8());
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QApplication::setActiveWindow(&window);
    QVERIFY(QTest::qWaitForWindowActive(&window));
    for (int i = 4; i >= 0; --i) {
      QTest::keyClick(window.focusWidget() ? window.focusWidget() : &window, static_cast<Qt::Key>(Qt::Key_1 + i), Qt::ControlModifier);
      QCOMPARE(window.pageList()->currentRow(), i);
    }
    QAction* refresh = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
      if (action->text() == "&Refresh environment report") refresh = action;
    QSignalSpy refreshed(refresh, &QAction::triggered);
    QTest::keyClick(&window, Qt::Key_F5);
    QCOMPARE(refreshed.count(), 1);

    QTest::keyClick(&window, Qt::Key_3, Qt::ControlModifier);
    auto* editor = window.findChild<ConfigEditorPage*>();
    editor->editor()->setFocus();
    QString title;
    close_next_file_dialog(&title);
    QTest::keyClick(editor->editor(), Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(title, QString("Save DeepSpeed config"));
    title.clear();
    QApplication::setActiveWindow(&window);  // offscreen, no window manager gives it back after the dialog
    close_next_file_dialog(&title);
    QTest::keyClick(editor->editor(), Qt::Key_O, Qt::ControlModifier);
    QCOMPARE(title, QString("Open DeepSpeed config"));
    QApplication::setActiveWindow(&window);
    const QString text = editor->editor()->toPlainText();
    editor->editor()->moveCursor(QTextCursor::End);
    QTest::keyClicks(editor->editor(), "x");
    QTest::keyClick(editor->editor(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(editor->editor()->toPlainText(), text);
    QTest::keyClick(editor->editor(), Qt::Key_Y, Qt::ControlModifier);
    QCOMPARE(editor->editor()->toPlainText(), text + "x");
    QTest::keyClick(editor->editor(), Qt::Key_Z, Qt::ControlModifier);
    QTest::keyClick(editor->editor(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(editor->editor()->toPlainText(), text + "x");
    QTest::keyClick(editor->editor(), Qt::Key_Z, Qt::ControlModifier);
    editor->editor()->document()->setModified(false);

    QTest::keyClick(&window, Qt::Key_I, Qt::ControlModifier);
    auto* import = window.findChild<ImportDialog*>();
    QVERIFY(import && import->isVisible());
    import->close();
    QApplication::setActiveWindow(&window);

    QTest::keyClick(&window, Qt::Key_5, Qt::ControlModifier);
    auto* sessions = window.findChild<SessionsPage*>();
    sessions->filterField()->setFocus();
    QSignalSpy status(sessions, &SessionsPage::statusMessage);
    QTest::keyClick(sessions->filterField(), Qt::Key_Return, Qt::ControlModifier);
    QTest::keyClick(sessions->filterField(), Qt::Key_P, Qt::ControlModifier);
    QStringList said;
    for (const auto& m : status) said << m.first().toString();
    QVERIFY2(said.filter("Select 1 to 8 sessions").size() == 1 && said.filter("Select one session").size() == 1,
             qPrintable(said.join(" | ")));
    sessions->showTab("Profile");
    QPushButton* clear = nullptr;
    for (auto* button : sessions->findChildren<QPushButton*>())
      if (button->text() == "Clear selection") clear = button;
    QVERIFY(clear && clear->isVisible());
    QSignalSpy cleared(clear, &QPushButton::clicked);
    QTest::keyClick(sessions->profileView(), Qt::Key_Escape);
    QTRY_COMPARE(cleared.count(), 1);

    QTest::keyClick(&window, Qt::Key_4, Qt::ControlModifier);
    LaunchPage* launch = window.launchPage();
    launch->setUseEditorConfig(false);
    LaunchSpec spec;
    spec.config_path = (QString(SHARDSCOPE_SOURCE_DIR) + "/resources/demo/ds_config.json").toStdString();
    spec.session_file = dir_.filePath("keys.db").toStdString();
    launch->setSpec(spec);
    QSignalSpy started(launch, &LaunchPage::runStarted), finished(launch, &LaunchPage::runFinished);
    QTest::keyClick(&window, Qt::Key_R, Qt::ControlModifier);
    QTRY_COMPARE(started.count(), 1);
    QTest::keyClick(&window, Qt::Key_Period, Qt::ControlModifier);
    QVERIFY(finished.count() == 1 || finished.wait(15000));
    qputenv("SHARDSCOPE_CLI", slow_cli_.toUtf8());
  }

  void closingOnARunningJobAsksFirst() {
    // A launcher that runs until stopped (SIGTERM ends it, as the real one stops its ranks).
    const QString running = write_script(dir_, "running_cli",
                                         "echo 'shardscope launch: starting 2 rank(s)'\nexec sleep 120\n");
    qputenv("SHARDSCOPE_CLI", running.toUtf8());
    MainWindow window;
    window.show();
    LaunchPage* page = window.launchPage();
    page->setUseEditorConfig(false);
    LaunchSpec spec;
    spec.config_path = (QString(SHARDSCOPE_SOURCE_DIR) + "/resources/demo/ds_config.json").toStdString();
    spec.session_file = dir_.filePath("job.db").toStdString();
    page->setSpec(spec);
    page->start();
    QVERIFY(page->isRunning());
    const qint64 launcher = page->runner()->launcherPid();
    answer_next_message_box(QMessageBox::Cancel);
    QVERIFY(!window.close());  // Cancel: the window stays and the job goes on
    QVERIFY(page->isRunning() && alive(launcher));
    answer_next_message_box(QMessageBox::Yes);
    QVERIFY(window.close());  // Yes: the job is stopped, then the window closes
    QVERIFY(!alive(launcher));
    qputenv("SHARDSCOPE_CLI", slow_cli_.toUtf8());
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
