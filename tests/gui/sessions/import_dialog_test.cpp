// File > Import against `shardscope sessions import`: the real DeepSpeed 0.19.7 log of the
// sessions fixtures, a csv_monitor folder and a rank's trace written here, imported by the dialog
// (on its worker thread) and by the CLI into another file, give the same counts, notes and
// session; a bad csv line is named (file and line) and writes nothing, into an existing file or a
// new one; a cancelled import writes nothing; a bad trace rank is named; from the main window the
// new session is selected.
#include <atomic>

#include <QDir>
#include <QFile>
#include <QItemSelectionModel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include "app/gui/sessions/import_dialog.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/session_summary.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
using Json = nlohmann::json;

namespace {

const std::string kLog = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/sessions/data/deepspeed_0.19.7_zero2_cpu.log";

// Kineto's shape (torch 2.x) without distributedInfo: the rank comes from the dialog's rank cell.
constexpr const char* kTrace = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#0", "pid": 0, "tid": 7, "ts": 1000.0, "dur": 600.0, "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32", "pid": 0, "tid": 7, "ts": 1020.5, "dur": 12.25, "args": {"device": 0, "stream": 7, "correlation": 42}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 20, "ts": 1040.0, "dur": 100.0, "args": {"device": 0, "stream": 20}}
  ], "baseTimeNanoseconds": 1790000000000000000})";

void write(const QString& path, const QByteArray& text) {
  QDir().mkpath(QFileInfo(path).path());
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}

ss::Store open_store(const std::string& path) { return ss::Store::open(path, {}); }

bool import_and_wait(ImportDialog& dialog) {
  QSignalSpy finished(&dialog, &ImportDialog::importFinished);
  dialog.startImport();
  return finished.count() == 1 || finished.wait(20000);
}

}  // namespace

class ImportDialogTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  ImportRequest request_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeImportDialogTest");
    QSettings().clear();
    QVERIFY(dir_.isValid());
    write(dir_.filePath("csv/job/Train_Samples_lr.csv"), "step,lr\r\n8,0.0\r\n16,0.0006309297535714573\r\n24,0.001\r\n");
    write(dir_.filePath("trace.json"), kTrace);
    request_.session_file = dir_.filePath("gui.db").toStdString();
    request_.sources.csv_monitor_dir = dir_.filePath("csv/job").toStdString();
    request_.sources.log_files = {kLog};
    request_.sources.traces = {{1, dir_.filePath("trace.json").toStdString()}};
    request_.name = "imported-run";
    request_.tags = {"deepspeed", "gui"};
  }

  void fieldsRoundTrip() {
    ImportDialog dialog;
    dialog.setRequest(request_);
    QString error;
    const ImportRequest back = dialog.request(&error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(import_arguments(back), import_arguments(request_));
  }

  void dialogImportEqualsCli() {
    ImportDialog dialog;
    dialog.setRequest(request_);
    QSignalSpy imported(&dialog, &ImportDialog::imported);
    QVERIFY(import_and_wait(dialog));
    const ImportOutcome& gui = dialog.outcome();
    QVERIFY2(gui.ok, gui.error.c_str());
    QCOMPARE(imported.count(), 1);
    QCOMPARE(imported[0][1].toString().toStdString(), gui.result.session_uid);
    QVERIFY(dialog.bannerText().contains("6 step rows"));
    // The CLI twin with the same inputs, into another file.
    ImportRequest cli_request = request_;
    cli_request.session_file = dir_.filePath("cli.db").toStdString();
    auto args = import_arguments(cli_request);
    args.push_back("--json");
    const auto cli = shardscope::testing::run_cli(args);
    QVERIFY2(cli.exit_code == 0, cli.err.c_str());
    const Json counts = Json::parse(cli.out);
    QCOMPARE(gui.result.steps, counts["steps"].get<std::size_t>());
    QCOMPARE(gui.result.series_points, counts["series_points"].get<std::size_t>());
    QCOMPARE(gui.result.comm_summaries, counts["comm_summaries"].get<std::size_t>());
    QCOMPARE(gui.result.comm_records, counts["comm_records"].get<std::size_t>());
    QCOMPARE(gui.result.activities, counts["activities"].get<std::size_t>());
    QCOMPARE(gui.result.activities, std::size_t(2));  // the trace's two kernels
    QCOMPARE(gui.result.log_lines, counts["log_lines"].get<std::size_t>());
    QCOMPARE(gui.result.samples_per_step, counts["samples_per_step"].get<std::int64_t>());
    QCOMPARE(gui.result.notes, counts["notes"].get<std::vector<std::string>>());
    // The same session in both files.
    ss::Store gui_store = open_store(request_.session_file);
    ss::Store cli_store = open_store(cli_request.session_file);
    const auto a = ss::load_session(gui_store, gui.result.session_id);
    const auto b = ss::load_session(cli_store, counts["session_id"].get<std::int64_t>());
    QCOMPARE(a.info.name, std::string("imported-run"));
    QCOMPARE(a.info.name, b.info.name);
    QCOMPARE(a.info.tags, b.info.tags);
    QCOMPARE(a.info.origin, b.info.origin);
    QCOMPARE(a.info.status, b.info.status);
    QCOMPARE(a.info.world_size, b.info.world_size);
    QVERIFY(a.info.first_step && a.info.first_step == b.info.first_step);
    QVERIFY(a.info.last_step == b.info.last_step);
    QCOMPARE(a.config_json, b.config_json);
    QCOMPARE(a.origin_json, b.origin_json);
    for (auto metric : {ss::Metric::kLr, ss::Metric::kLoss, ss::Metric::kStepTime}) {
      const auto x = ss::load_curve(gui_store, a.info.id, metric), y = ss::load_curve(cli_store, b.info.id, metric);
      QCOMPARE(x.size(), y.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        QCOMPARE(x[i].step, y[i].step);
        QCOMPARE(x[i].value, y[i].value);
      }
    }
    QCOMPARE(ss::load_activities(gui_store, a.info.id, 1).size(), ss::load_activities(cli_store, b.info.id, 1).size());
    QCOMPARE(ss::load_profiled_ranks(gui_store, a.info.id), std::vector<int>{1});
  }

  void badInputIsNamedAndWritesNothing() {
    write(dir_.filePath("bad/job/Train_Samples_lr.csv"), "step,lr\r\n8,0.1\r\n16,not-a-number\r\n");
    ImportRequest bad = request_;
    bad.sources.csv_monitor_dir = dir_.filePath("bad/job").toStdString();
    const std::size_t before = [&] {
      ss::Store store = open_store(bad.session_file);
      return ss::list_sessions(store).size();
    }();
    QVERIFY(before >= 1);
    ImportDialog dialog;
    dialog.setRequest(bad);
    QVERIFY(import_and_wait(dialog));
    QVERIFY(!dialog.outcome().ok);
    const QString error = QString::fromStdString(dialog.outcome().error);
    QVERIFY2(error.contains("Train_Samples_lr.csv") && error.contains("3"), qPrintable(error));
    QVERIFY(dialog.bannerText().contains("Not imported"));
    {
      ss::Store store = open_store(bad.session_file);
      QCOMPARE(ss::list_sessions(store).size(), before);
    }
    // Into a file that did not exist: it does not exist afterwards either.
    bad.session_file = dir_.filePath("new.db").toStdString();
    dialog.setRequest(bad);
    QVERIFY(import_and_wait(dialog));
    QVERIFY(!dialog.outcome().ok);
    QVERIFY(!QFileInfo::exists(dir_.filePath("new.db")));
    // A rank that is not a number is named before anything runs.
    ImportRequest ranked = request_;
    dialog.setRequest(ranked);
    QTableWidget* traces = dialog.findChild<QTableWidget*>();
    QVERIFY(traces);
    traces->item(0, 0)->setText("one");
    QVERIFY(import_and_wait(dialog));
    QVERIFY(!dialog.outcome().ok);
    QVERIFY2(dialog.bannerText().contains("row 1: rank 'one'"), qPrintable(dialog.bannerText()));
  }

  void theProgressBarShowsTheTracesBytesReadOfAll() {
    ss::ImportProgress p;
    p.stage = "traces";
    p.done = 1;
    p.total = 4;
    p.file = "/data/run/rank3.json";
    p.file_index = 3;
    p.files = 64;
    p.pass = 2;
    p.bytes_done = 25'600'000'000;  // past an int: a 64-rank set of 200 MB traces, both passes
    p.bytes_total = 25'600'000'000 * 2;
    ImportProgressBar bar = import_progress_bar(p);
    QCOMPARE(bar.maximum, 1000);
    QCOMPARE(bar.value, 500);
    QCOMPARE(QString::fromStdString(bar.text),
             QString("traces: rank3.json (4 of 64), pass 2 of 2: 25600.0 of 51200.0 MB read (50 %)"));
    p.stage = "config";
    p.files = 0;
    p.done = 2;
    bar = import_progress_bar(p);
    QCOMPARE(bar.maximum, 4);
    QCOMPARE(bar.value, 2);
    QCOMPARE(QString::fromStdString(bar.text), QString("config (2 of 4)"));
  }

  void aTraceImportReportsItsBytesToTheEnd() {
    // The dialog's worker gets the library's trace reports: the last one has read every byte.
    std::vector<ss::ImportProgress> reports;
    ImportRequest request = request_;
    request.session_file = dir_.filePath("progress.db").toStdString();
    const ImportOutcome outcome = run_import(request, [&](const ss::ImportProgress& p) { reports.push_back(p); });
    QVERIFY2(outcome.ok, outcome.error.c_str());
    const ss::ImportProgress* last = nullptr;
    for (const auto& p : reports)
      if (p.stage == "traces" && p.files > 0) last = &p;
    QVERIFY(last);
    QVERIFY(last->bytes_total > 0);
    QCOMPARE(import_progress_bar(*last).value, 1000);
  }

  void aCancelledImportWritesNothing() {
    // What Close does while the dialog's worker reads: the library stops before it writes, and
    // the session file this import would have created is not left behind.
    ImportRequest request = request_;
    request.session_file = dir_.filePath("cancelled.db").toStdString();
    std::atomic<bool> cancel{true};
    std::vector<std::string> stages;
    const ImportOutcome outcome = run_import(request, [&](const ss::ImportProgress& p) { stages.push_back(p.stage); }, &cancel);
    QVERIFY(!outcome.ok);
    QVERIFY(outcome.cancelled);
    QVERIFY(stages.empty());
    QVERIFY(!QFileInfo::exists(dir_.filePath("cancelled.db")));
  }

  void mainWindowSelectsTheImportedSession() {
    MainWindow window;
    window.show();
    auto* page = window.findChild<SessionsPage*>();
    QSignalSpy loaded(page, &SessionsPage::catalogLoaded);
    page->openFiles({QString::fromStdString(request_.session_file)});
    QVERIFY(loaded.wait(10000));
    const int rows_before = page->catalogModel()->rowCount();
    QPushButton* import_button = nullptr;  // the page's toolbar opens the same dialog as File > Import
    for (auto* button : page->findChildren<QPushButton*>())
      if (button->text() == QString("Import\u2026")) import_button = button;
    QVERIFY(import_button);
    import_button->click();
    ImportDialog* dialog = window.findChild<ImportDialog*>();
    QVERIFY(dialog && dialog->isVisible());
    QCOMPARE(window.showImportDialog(), dialog);  // one dialog
    QCOMPARE(dialog->sessionFile(), QFileInfo(QString::fromStdString(request_.session_file)).absoluteFilePath());
    ImportRequest again = request_;
    again.session_file = dialog->sessionFile().toStdString();
    again.name = "imported-again";
    dialog->setRequest(again);
    QVERIFY(import_and_wait(*dialog));
    QVERIFY2(dialog->outcome().ok, dialog->outcome().error.c_str());
    QVERIFY(loaded.count() >= 2 || loaded.wait(10000));
    QCOMPARE(page->catalogModel()->rowCount(), rows_before + 1);
    QTableView* list = nullptr;
    for (auto* view : page->findChildren<QTableView*>())
      if (view->model() == page->filterProxy()) list = view;
    QVERIFY(list);
    const auto selected = list->selectionModel()->selectedRows();
    QCOMPARE(selected.size(), 1);
    QCOMPARE(selected[0].siblingAtColumn(SessionCatalogModel::kName).data().toString(), QString("imported-again"));
  }
};

QTEST_MAIN(ImportDialogTest)
#include "import_dialog_test.moc"
