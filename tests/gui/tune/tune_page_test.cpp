// The Tune page against real `shardscope tune` runs: 2 CPU ranks (Gloo) of a tiny GPT-2, a space
// of ZeRO 0/2 x micro-batch 1/4 under a 200 MiB budget, which the estimator splits into two pruned
// candidates and two real trials. The page's table and scatter hold exactly the store's rows, the
// pruned ones marked, the report's best highlighted; the best config opens in the Config Editor and
// two trials go to Sessions & Compare; Stop ends the tuner and every process of its trials.
// Also the pure parts: the command line, the space preview, the announcement line.

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/tune/tune_page.hpp"
#include "app/gui/tune/tune_runner.hpp"
#include "app/gui/tune/tune_trials_model.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "sessions/tune_records.hpp"
#include "tests/process_helpers.hpp"
#include "tune/memory_pruning.hpp"
#include "tune/tune_report.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

class TunePageTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  TuneSpec tinySpec(const QString& name, const std::string& window = "2:3") const {
    TuneSpec s;
    s.config_path = dir_.filePath("ds.json").toStdString();
    s.space = {"zero_optimization.stage=0,2", "train_micro_batch_size_per_gpu=1,4", "activation_checkpointing=false",
               "zero_optimization.offload_optimizer.device=none", "zero_optimization.offload_param.device=none"};
    s.memory_budget = "200MiB";
    s.processes = 2;
    s.profile_steps = window;
    s.db = dir_.filePath(name + ".db").toStdString();
    s.out_dir = dir_.filePath(name + "_out").toStdString();
    s.train_args = "--model gpt2 --layers 2 --hidden 32 --heads 2 --vocab 64 --seq-len 16 --device cpu";
    return s;
  }

  static std::vector<ss::TuneTrialRecord> storedTrials(const std::string& db) {
    auto store = ss::Store::open(db);
    const auto runs = ss::load_tune_runs(store);
    return runs.empty() ? std::vector<ss::TuneTrialRecord>{} : ss::load_tune_trials(store, runs[0].uid);
  }

  static QVector<QPointF> points(QCustomPlot* plot, const QString& name) {
    QVector<QPointF> out;
    const QCPGraph* graph = scatter_graph(plot, name);
    if (!graph) return out;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) out << QPointF(it->key, it->value);
    return out;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeTuneTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    QVERIFY(dir_.isValid());
    QFile file(dir_.filePath("ds.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"train_batch_size": 8, "steps_per_print": 100, "gradient_clipping": 1.0,
                  "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}})");
  }

  void commandLineAndSpace() {
    TuneSpec s = tinySpec("args");
    const auto args = tune_arguments(s);
    const std::vector<std::string> head{"tune", "--config", s.config_path, "--num_procs", "2"};
    QVERIFY(std::equal(head.begin(), head.end(), args.begin()));
    const auto dash = std::find(args.begin(), args.end(), "--");
    QVERIFY(dash != args.end());
    QCOMPARE(std::vector<std::string>(dash + 1, args.end()), split_train_args(s.train_args));
    QVERIFY(std::find(args.begin(), args.end(), "200MiB") != args.end());
    QVERIFY(std::find(args.begin(), args.end(), "--try-dominated") == args.end());
    s.try_dominated = true;  // the form's "Also try configs slower by construction"
    const auto all = tune_arguments(s);
    QVERIFY(std::find(all.begin(), std::find(all.begin(), all.end(), "--"), "--try-dominated") != all.end());
    s.try_dominated = false;
    // The preview is the space the CLI builds: the five --space rows, grid 2 x 2.
    const SpacePreview preview = preview_space(s);
    QVERIFY2(preview.error.empty(), preview.error.c_str());
    QCOMPARE(preview.grid_points, std::size_t(4));
    for (const auto& row : preview.rows) QCOMPARE(row.origin, std::string("--space"));
    // Without rows it is the default space: ZeRO 0-3 among them.
    s.space.clear();
    const auto lines = default_space_lines(s);
    QVERIFY(std::find(lines.begin(), lines.end(), "zero_optimization.stage=0,1,2,3") != lines.end());
    s.space = {"zero_optimization.stage"};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tune_arguments(s));
    QCOMPARE(tune_run_uid_in_line("shardscope tune: tune run 81ae5d66aa in /tmp/t.db"), QString("81ae5d66aa"));
    QCOMPARE(tune_run_uid_in_line("shardscope tune: resuming tune run 0a1b of x.db"), QString("0a1b"));
    QVERIFY(tune_run_uid_in_line("[rank 0] tune run 12 in x").isEmpty());
    // The page's CLI twin is that command.
    TunePage page;
    TuneSpec checked = tinySpec("args");
    checked.try_dominated = true;
    page.setSpec(checked);
    QVERIFY(page.spec().try_dominated);
    QCOMPARE(page.cliTwin()->text().toStdString(), shell_command("shardscope", tune_arguments(page.spec())));
    QVERIFY(page.cliTwin()->text().contains("--try-dominated"));
  }

  void liveRunTableScatterBestAndHandoffs() {
    MainWindow window;
    TunePage* page = window.tunePage();
    const TuneSpec spec = tinySpec("live");
    page->setSpec(spec);
    int most_rows_while_running = 0;
    connect(page->trialsModel(), &QAbstractItemModel::rowsInserted, this, [&] {
      if (page->isRunning()) most_rows_while_running = page->trialsModel()->rowCount();
    });
    QSignalSpy finished(page, &TunePage::runFinished);
    page->start();
    QVERIFY2(page->isRunning(), qPrintable(page->banner()->text()));
    QVERIFY2(finished.wait(300000), qPrintable(page->tunerOutput()->toPlainText()));
    QVERIFY2(finished.first().first().toInt() == 0, qPrintable(page->tunerOutput()->toPlainText()));
    QTRY_COMPARE_WITH_TIMEOUT(page->view().run_status, std::string("completed"), 5000);
    QVERIFY2(most_rows_while_running > 0, "trials arrive while the tuner runs");

    // The table holds the store's rows.
    const auto stored = storedTrials(spec.db);
    QCOMPARE(stored.size(), std::size_t(4));
    TuneTrialsModel* model = page->trialsModel();
    QCOMPARE(model->rowCount(), 4);
    int pruned = 0, ok = 0;
    for (int r = 0; r < 4; ++r) {
      const auto& t = stored[static_cast<std::size_t>(r)];
      QCOMPARE(model->data(model->index(r, TuneTrialsModel::kParameters), Qt::DisplayRole).toString().toStdString(), t.name);
      QCOMPARE(model->data(model->index(r, TuneTrialsModel::kStatus), Qt::DisplayRole).toString().toStdString(), t.status);
      QCOMPARE(model->data(model->index(r, TuneTrialsModel::kPredicted), Qt::DisplayRole).toString().toStdString(),
               shardscope::tune::gib_text(*t.predicted_bytes));
      if (t.status == "pruned") {
        ++pruned;
        QCOMPARE(model->data(model->index(r, 0), Qt::ForegroundRole).value<QBrush>().color(), trial_mark_color(TrialMark::kPruned));
        QCOMPARE(model->data(model->index(r, TuneTrialsModel::kMetric), Qt::DisplayRole).toString(), QString("-"));
      } else {
        ++ok;
        QVERIFY2(t.status == "ok", (t.status + ": " + t.message).c_str());
        QCOMPARE(model->data(model->index(r, TuneTrialsModel::kMetric), TuneTrialsModel::kSortRole).toDouble(), *t.metric_value);
      }
    }
    QCOMPARE(pruned, 2);
    QCOMPARE(ok, 2);
    QCOMPARE(model->headerData(TuneTrialsModel::kMetric, Qt::Horizontal, Qt::DisplayRole).toString(), QString("tokens/s"));

    // The best is the report's: starred, bold, and the star on the scatter.
    const auto order = shardscope::tune::ranked_trials(stored, "tokens_per_s");
    QVERIFY(!order.empty());
    const int best = static_cast<int>(order.front());
    QVERIFY(model->data(model->index(best, 0), Qt::DisplayRole).toString().startsWith(QString::fromUtf8("\u2605")));
    QVERIFY(model->data(model->index(best, 1), Qt::FontRole).value<QFont>().bold());
    for (int r = 0; r < 4; ++r)
      if (r != best) QVERIFY(!model->data(model->index(r, 0), Qt::DisplayRole).toString().startsWith(QString::fromUtf8("\u2605")));

    // The scatter: MiB here (the pruned candidates' ~2 GiB makes it a log axis in GiB or MiB).
    QCustomPlot* plot = page->scatter();
    const bool gib = plot->xAxis->label().contains("GiB");
    const double unit = gib ? 1073741824.0 : 1048576.0;
    QVERIFY(plot->xAxis->label().startsWith("peak memory per rank"));
    QCOMPARE(plot->yAxis->label(), QString("tokens/s (all ranks)"));
    const auto pruned_points = points(plot, kScatterPruned);
    QCOMPARE(pruned_points.size(), 2);
    const auto ran = points(plot, kScatterRan);
    const auto predicted = points(plot, kScatterPredicted);
    QCOMPARE(ran.size(), 2);
    QCOMPARE(predicted.size(), 2);
    for (const auto& t : stored) {
      if (t.status == "pruned") {
        QVERIFY(pruned_points.contains(QPointF(*t.predicted_bytes / unit, 0)));
      } else {
        QVERIFY(ran.contains(QPointF(static_cast<double>(*t.measured_peak_bytes) / unit, *t.tokens_per_s)));
        QVERIFY(predicted.contains(QPointF(*t.predicted_bytes / unit, *t.tokens_per_s)));
      }
    }
    const auto star = points(plot, kScatterBest);
    QCOMPARE(star.size(), 1);
    QCOMPARE(star.first(), QPointF(static_cast<double>(*stored[best].measured_peak_bytes) / unit, *stored[best].tokens_per_s));
    QVERIFY(scatter_graph(plot, kScatterUsable));
    QVERIFY(!scatter_graph(plot, kScatterOom)->visible() || points(plot, kScatterOom).isEmpty());
    // A click on the star selects the best row.
    const QPoint at(qRound(plot->xAxis->coordToPixel(star.first().x())), qRound(plot->yAxis->coordToPixel(star.first().y())));
    QCOMPARE(scatter_row_at(plot, page->scatterIndex(), at), best);

    // Open best config: the run's ds_config.json in the Config Editor.
    auto* editor = window.findChild<ConfigEditorPage*>();
    QVERIFY(editor);
    QCOMPARE(page->bestConfigPath(), QFileInfo(QString::fromStdString(spec.out_dir + "/ds_config.json")).absoluteFilePath());
    page->openBestConfig();
    QCOMPARE(editor->filePath(), page->bestConfigPath());

    // Two trials to Compare: the Sessions page compares exactly their sessions.
    QList<int> ran_rows, pruned_rows;
    for (int r = 0; r < 4; ++r) (stored[static_cast<std::size_t>(r)].status == "ok" ? ran_rows : pruned_rows) << r;
    QSignalSpy compared(window.sessionsPage(), &SessionsPage::comparisonReady);
    page->selectTrials(ran_rows);
    QVERIFY(page->compareButton()->isEnabled());
    page->compareSelected();
    QVERIFY(compared.wait(30000));
    const auto& refs = window.sessionsPage()->comparison().sessions;
    QCOMPARE(refs.size(), std::size_t(2));
    auto store = ss::Store::open(spec.db);
    for (std::size_t i = 0; i < 2; ++i)
      QCOMPARE(refs[i].id, ss::find_session(store, stored[static_cast<std::size_t>(ran_rows[int(i)])].session_uid));
    // A pruned trial has no session: named, nothing compared.
    QSignalSpy status(page, &TunePage::statusMessage);
    page->selectTrials({pruned_rows[0], ran_rows[0]});
    page->compareSelected();
    QCOMPARE(status.size(), 1);
    QVERIFY(status.first().first().toString().contains("pruned"));
  }

  void stopEndsTheTunerAndEveryTrialProcess() {
    TunePage page;
    const TuneSpec spec = tinySpec("stop", "2:4000");
    page.setSpec(spec);
    QSignalSpy finished(&page, &TunePage::runFinished);
    page.start();
    QVERIFY(page.isRunning());
    const qint64 tuner = page.runner()->tunerPid();
    // Wait until a trial's ranks are up: the tuner, the trial's launch and its two ranks.
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < 90000 && page.isRunning() &&
           descendant_pids(tuner).size() < 3)
      QTest::qWait(100);
    QVERIFY2(descendant_pids(tuner).size() >= 3, qPrintable(page.tunerOutput()->toPlainText()));
    QTRY_VERIFY_WITH_TIMEOUT(page.trialsModel()->rowCount() > 0 &&
                                 page.trialsModel()->row(page.trialsModel()->rowCount() - 1).status == "running", 30000);
    const QList<qint64> tree = descendant_pids(tuner);
    page.stop();
    QVERIFY(finished.wait(40000));
    QCOMPARE(finished.first().first().toInt(), 130);  // the tuner's own clean stop, not a kill
    QVERIFY(shardscope::test::process_gone(static_cast<pid_t>(tuner)));
    for (qint64 pid : tree) QVERIFY2(shardscope::test::process_gone(static_cast<pid_t>(pid)), qPrintable(QString::number(pid)));
    QVERIFY(page.runner()->liveTreePids().isEmpty());
    QTRY_COMPARE_WITH_TIMEOUT(page.view().run_status, std::string("stopped"), 5000);
    QVERIFY(page.banner()->text().startsWith("Stopped"));
  }
};

QTEST_MAIN(TunePageTest)
#include "tune_page_test.moc"
