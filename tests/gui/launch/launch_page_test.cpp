// The Launch & Watch page against real runs of `shardscope launch` on the CPU: a 2-rank tiny GPT-2
// whose live curves hold exactly the session's rows and which ends visible in Sessions & Compare;
// Stop leaves no launcher or rank process behind; a failing run names the rank and the reason.
// Also the pure parts: the argument list, the `[rank R] ` prefix and the launcher's announcements.

#include <algorithm>

#include <QFile>
#include <QLineEdit>
#include <QFileInfo>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/launch_spec.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/process_helpers.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;

namespace {

int free_port() { return shardscope::test::free_port(); }

bool process_alive(qint64 pid) {
  return !shardscope::test::process_gone(static_cast<pid_t>(pid), std::chrono::milliseconds(50));
}

}  // namespace

class LaunchPageTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString config_;

  LaunchSpec tinySpec(const QString& session, int steps, const QString& name) const {
    LaunchSpec s;
    s.config_path = config_.toStdString();
    s.model = "gpt2";
    s.layers = 2;
    s.hidden = 64;
    s.heads = 2;
    s.seq_len = 32;
    s.vocab = 256;
    s.processes = 2;
    s.steps = steps;
    s.session_file = session.toStdString();
    s.name = name.toStdString();
    s.master_port = free_port();
    return s;
  }

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeLaunchTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    QVERIFY(dir_.isValid());
    config_ = dir_.filePath("tiny.json");
    QFile file(config_);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
                  "wall_clock_breakdown": true, "steps_per_print": 5,
                  "optimizer": {"type": "AdamW", "params": {"lr": 0.002}},
                  "zero_optimization": {"stage": 1}})");
  }

  void argumentsAndOutputParsing() {
    LaunchSpec s = tinySpec("/tmp/s.db", 7, "run one");
    s.master_port = 0;
    s.hf_config = "/m/config.json";
    const auto args = launch_arguments(s);
    const std::vector<std::string> expected = {"launch", "--num_procs", "2", "--session", "/tmp/s.db", "--name", "run one",
                                               "--", "--config", config_.toStdString(), "--model", "gpt2",
                                               "--model-config", "/m/config.json", "--seq-len", "32",
                                               "--data", "synthetic", "--steps", "7"};
    QCOMPARE(args, expected);
    QVERIFY(shell_command("shardscope", args).find("--name 'run one'") != std::string::npos);
    // Every flag the page offers reaches its side of `--`.
    s.hf_config.clear();
    s.master_port = 29612;
    s.master_addr = "10.0.0.2";
    s.overrides = {"zero_optimization.stage=3", "gradient_clipping=0.5"};
    s.save_dir = "/tmp/ckpt";
    s.save_every = 5;
    s.load_dir = "/tmp/resume";
    s.profile_start = 3;
    s.profile_count = 2;
    s.kv_heads = 1;
    s.seed = 7;
    s.activation_checkpointing = true;
    s.extra_train_args = split_shell_words("--device cpu --name-suffix 'a b'");
    QCOMPARE(s.extra_train_args, (std::vector<std::string>{"--device", "cpu", "--name-suffix", "a b"}));
    const auto full = launch_arguments(s);
    const auto separator = std::find(full.begin(), full.end(), std::string("--"));
    const std::vector<std::string> launcher(full.begin() + 1, separator), train(separator + 1, full.end());
    auto has = [](const std::vector<std::string>& v, const std::string& flag, const std::string& value) {
      for (std::size_t i = 0; i + 1 < v.size(); ++i)
        if (v[i] == flag && v[i + 1] == value) return true;
      return false;
    };
    QVERIFY(has(launcher, "--master_port", "29612") && has(launcher, "--master_addr", "10.0.0.2"));
    QVERIFY(has(train, "--set", "zero_optimization.stage=3") && has(train, "--set", "gradient_clipping=0.5"));
    QVERIFY(has(train, "--save", "/tmp/ckpt") && has(train, "--save-every", "5") && has(train, "--load", "/tmp/resume"));
    QVERIFY(has(train, "--profile-steps", "3:2") && has(train, "--kv-heads", "1") && has(train, "--seed", "7"));
    QVERIFY(std::find(train.begin(), train.end(), "--activation-checkpointing") != train.end());
    QCOMPARE(std::vector<std::string>(train.end() - 4, train.end()), s.extra_train_args);
    // Every K steps saves into the folder: with the folder cleared --save-every means nothing and is not passed.
    s.save_dir.clear();
    const auto no_folder = train_arguments(s);
    QVERIFY(std::find(no_folder.begin(), no_folder.end(), "--save-every") == no_folder.end());
    s.save_dir = "/tmp/ckpt";
    s.overrides = {"no_equals_sign"};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_arguments(s));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, split_shell_words("--name 'unclosed"));
    s.session_file.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_arguments(s));
    auto line = parse_console_line("[rank 3] shardscope: error: bad file", true);
    QCOMPARE(line.rank, 3);
    QCOMPARE(line.text, std::string("shardscope: error: bad file"));
    QCOMPARE(line.level, LineLevel::kError);
    // Words, not substrings: a summary's counts are not errors; Python's exception classes are.
    QCOMPARE(parse_console_line("log warnings / errors        0 / 0", false, 0).level, LineLevel::kInfo);
    QCOMPARE(parse_console_line("RuntimeError: NCCL communicator was aborted", false, 0).level, LineLevel::kError);
    QCOMPARE(parse_console_line("[2026-12-01 16:00:00] [ERROR] rank 1 died", false, 0).level, LineLevel::kError);
    QCOMPARE(parse_console_line("KeyboardInterrupt exception in rank 0", false, 0).level, LineLevel::kError);
    QCOMPARE(parse_console_line("UserWarning: torch.cuda.amp is deprecated", false, 0).level, LineLevel::kWarning);
    QCOMPARE(parse_console_line("[WARNING] [config.py:733] gradient_clipping", false, 0).level, LineLevel::kWarning);
    QCOMPARE(parse_console_line("shardscope launch: starting", false, 0).rank, -1);
    QCOMPARE(parse_console_line("step 5 loss 3.2", false, 0).rank, 0);  // one rank: no prefix
    // The CLI refusing its own flags is the launcher's line, a one-rank run's rank error is rank 0's.
    QCOMPARE(parse_console_line("shardscope: watch: 'deepspeed' is not an executable on PATH", true, 0).rank, -1);
    QCOMPARE(parse_console_line("shardscope: error: /x.bin: cannot open", true, 0).rank, 0);
    LaunchFacts facts;
    read_launcher_line("shardscope launch: starting 2 rank(s) on localhost (CPU), MASTER_ADDR=127.0.0.1 "
                       "MASTER_PORT=29500, session 63af905c41fab76d in l.db", facts);
    read_launcher_line("shardscope launch: rank 0 pid 22478 (cpu), rank 1 pid 22480 (cpu)", facts);
    read_launcher_line("shardscope launch: rank 1 exited with code 1 (the first rank to fail); the launcher "
                       "stopped rank(s) 0. Exit code 1.", facts);
    read_launcher_line("shardscope launch:   shardscope: error: /x.bin: cannot open", facts);
    QCOMPARE(facts.session_uid, std::string("63af905c41fab76d"));
    QCOMPARE(facts.rank_pids, (std::vector<std::pair<int, long long>>{{0, 22478}, {1, 22480}}));
    QCOMPARE(facts.failed_rank, std::optional<int>(1));
    QVERIFY(facts.failure.find("cannot open") != std::string::npos);
  }

  // Under watch the supervisor speaks of the user's command, no rank: its lines are ShardScope's own
  // (the console's [launch] lines, not rank 0's output) and name no rank or pid for Stop to signal.
  // The form: "Save every" follows "Save to" (cleared, it is disabled and passes nothing).
  void saveEveryFollowsTheSaveFolder() {
    LaunchPage page;
    LaunchSpec s = tinySpec("/tmp/s.db", 7, "run");
    s.save_dir = "/tmp/ckpt";
    s.save_every = 5;
    page.setSpec(s);
    QCOMPARE(page.spec().save_every, 5);
    QVERIFY(page.cliTwin()->text().contains("--save-every 5"));
    s.save_dir.clear();
    page.setSpec(s);
    QCOMPARE(page.spec().save_every, 0);
    QVERIFY2(!page.cliTwin()->text().contains("--save-every"), qPrintable(page.cliTwin()->text()));
  }

  void watchsSupervisorLinesAreItsOwnAndNameNoRank() {
    for (const char* line : {"shardscope watch: the command (pid 4121) exited with code 1",
                             "shardscope watch: received SIGTERM: forwarding it to the command; it gets SIGKILL if "
                             "still running in 5 s (send it again to kill it now)",
                             "shardscope watch: the command was still running 5 s after being told to stop; sending SIGKILL"}) {
      QCOMPARE(parse_console_line(line, true, 0).rank, -1);
      LaunchFacts facts;
      read_launcher_line(line, facts);
      QVERIFY2(facts.rank_pids.empty() && !facts.failed_rank && facts.failed_who.empty(), line);
    }
  }

  // A one-rank run's lines have no prefix, nor has the closing summary: the launcher's (or watch's)
  // own line on stdout says where the run's output ends and the summary begins.
  void closingSummaryIsTheLaunchersNotRankZeros() {
    for (const char* header : {"shardscope launch: the run ended with exit code 0; the session it recorded:",
                               "shardscope watch: the command ended with exit code 1; the session it recorded:"}) {
      ConsoleReader reader(0);
      QCOMPARE(reader.read("step 5 loss 3.2", false).rank, 0);
      QCOMPARE(reader.read("shardscope launch: rank 0 pid 7 (cpu)", true).rank, -1);
      QVERIFY(!reader.read("shardscope launch: rank 0 pid 7 (cpu)", true).summary);  // stderr: no summary yet
      const ConsoleLine head = reader.read(header, false);
      QCOMPARE(head.rank, -1);
      QVERIFY(head.summary);
      for (const char* text : {"session 1  tiny  [completed]", "final loss (step)            0.75 (8)",
                               "[rank 0] cannot start a summary line, but it is read as one"}) {
        const ConsoleLine line = reader.read(text, false);
        QCOMPARE(line.rank, -1);
        QVERIFY(line.summary);
        QCOMPARE(line.text, std::string(text));
      }
      QCOMPARE(reader.read("log warnings / errors        0 / 1", false).level, LineLevel::kInfo);
      // The stderr pipe is read apart from stdout: the command's last stderr lines are still its own.
      const ConsoleLine late = reader.read("RuntimeError: the last words of rank 0", true);
      QCOMPARE(late.rank, 0);
      QVERIFY(!late.summary);
      QCOMPARE(late.level, LineLevel::kError);
    }
    ConsoleReader several(-1);  // several ranks: the prefix tells
    QCOMPARE(several.read("[rank 1] step 2", false).rank, 1);
    QVERIFY(!several.read("[rank 1] step 2", false).summary);
  }

  void consoleFiltersByRankLevelAndText() {
    RankConsole console;
    console.setWorldSize(2);
    console.append({-1, LineLevel::kInfo, "starting"});
    console.append({0, LineLevel::kInfo, "step 1 loss 5.0"});
    console.append({1, LineLevel::kWarning, "OVERFLOW! skipping step"});
    console.append({1, LineLevel::kError, "error: bad"});
    auto* filter = console.filter();
    QCOMPARE(filter->rowCount(), 4);
    QVERIFY(console.setRankFilter("1"));
    QCOMPARE(filter->rowCount(), 2);
    console.levelBox()->setCurrentIndex(3);  // error and above
    QCOMPARE(filter->rowCount(), 1);
    QVERIFY(console.setRankFilter(""));
    console.levelBox()->setCurrentIndex(0);
    console.searchField()->setText("LOSS");
    QCOMPARE(filter->rowCount(), 1);
    QCOMPARE(filter->index(0, 0).data().toString(), QString("[rank 0] step 1 loss 5.0"));
  }

  void twoRankRunEndsVisibleInCompare() {
    const QString session = dir_.filePath("runs.db");
    MainWindow window;
    window.show();
    auto* page = window.findChild<LaunchPage*>();
    QVERIFY(page);
    page->setUseEditorConfig(false);
    const LaunchSpec spec = tinySpec(session, 12, "gui-two-ranks");
    page->setSpec(spec);
    // A filter left from an earlier run must not hide this run's lines.
    QVERIFY(page->console()->setRankFilter("launcher"));
    page->console()->searchField()->setText("no line has this");
    QSignalSpy finished(page, &LaunchPage::runFinished);
    page->start();
    QVERIFY2(page->isRunning(), qPrintable(page->banner()->text()));
    QVERIFY(page->console()->rankField()->text().isEmpty());
    QVERIFY(page->console()->searchField()->text().isEmpty());
    QVERIFY(page->rankLegend()->text().contains("rank 0") && page->rankLegend()->text().contains("rank 1"));
    QVERIFY(page->cliTwin()->text().contains("--master_port"));
    QVERIFY(finished.wait(180000));
    QCOMPARE(finished.first().first().toInt(), 0);
    QTest::qWait(300);
    QTRY_COMPARE_WITH_TIMEOUT(page->plots()->pointCount("loss", 1), 12, 10000);
    QVERIFY2(page->banner()->text().contains("Completed"), qPrintable(page->banner()->text()));
    QCOMPARE(page->progress()->value(), 12);
    // The live curves are the session's rows, rank by rank.
    ss::Store store = ss::Store::open(session.toStdString(), {});
    const auto id = ss::find_session(store, page->sessionUid().toStdString());
    for (int rank = 0; rank < 2; ++rank) {
      const auto rows = ss::load_steps(store, id, rank);
      QCOMPARE(static_cast<int>(rows.size()), 12);
      QCPGraph* loss = page->plots()->chart("loss")->graph(rank);
      for (int i = 0; i < 12; ++i) {
        QCOMPARE(loss->data()->at(i)->key, double(rows[std::size_t(i)].step));
        QCOMPARE(loss->data()->at(i)->value, *rows[std::size_t(i)].loss);
      }
    }
    // The breakdown stacks forward, backward and step plus "other" to the slowest step time.
    const auto stack = page->plots()->breakdownAt(12);
    QVERIFY(stack.count("forward") && stack.count("backward"));
    double sum = 0;
    for (const auto& [name, ms] : stack) sum += ms;
    const auto step_ms = ss::load_curve(store, id, ss::Metric::kStepTime).back().value;
    qInfo("breakdown at step 12: sum %.4f ms, step time %.4f ms, other %.4f ms", sum, step_ms, stack.at("other"));
    if (stack.at("other") > 0)
      QVERIFY(std::fabs(sum - step_ms) <= 1e-9 * step_ms);  // phases + other = the step
    else
      QVERIFY(sum >= step_ms);  // phases overran the step clock: "other" is drawn as 0
    // Both ranks' lines reached the console.
    auto* console = page->console()->model();
    bool rank0 = false, rank1 = false;
    for (int r = 0; r < console->rowCount(); ++r) {
      const int rank = console->index(r).data(RankLogModel::kRankRole).toInt();
      rank0 = rank0 || rank == 0;
      rank1 = rank1 || rank == 1;
    }
    QVERIFY(rank0 && rank1);
    // "Open in Sessions & Compare": the session is listed and selected there.
    auto* sessions = window.findChild<SessionsPage*>();
    QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
    emit page->openSession(session, page->sessionUid());
    QVERIFY(loaded.wait(10000));
    QVERIFY(sessions->isVisible());
    const auto* model = sessions->catalogModel();
    QCOMPARE(model->rowCount(), 1);
    QCOMPARE(model->row(0).info.name, std::string("gui-two-ranks"));
    QCOMPARE(model->row(0).info.status, std::string("completed"));
    QCOMPARE(model->row(0).info.world_size, 2);
  }

  void stopLeavesNoProcessBehind() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    page.setSpec(tinySpec(dir_.filePath("stopped.db"), 1000000, "gui-stopped"));
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(page.isRunning());
    const qint64 launcher = page.runner()->launcherPid();
    QTRY_VERIFY_WITH_TIMEOUT(page.plots()->lastStep() >= 2, 120000);  // training for real
    const auto ranks = page.runner()->facts().rank_pids;
    QCOMPARE(ranks.size(), std::size_t(2));
    page.stop();
    QVERIFY(finished.wait(30000));
    QVERIFY(!process_alive(launcher));
    for (const auto& [rank, pid] : ranks) QVERIFY2(!process_alive(pid), qPrintable(QString("rank %1 pid %2 alive").arg(rank).arg(pid)));
    QVERIFY2(page.banner()->text().contains("Stopped") || page.banner()->text().contains("interrupted"),
             qPrintable(page.banner()->text()));
  }

  void failedRunNamesTheRank() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    LaunchSpec spec = tinySpec(dir_.filePath("failed.db"), 5, "gui-failed");
    spec.data = dir_.filePath("missing-tokens.bin").toStdString();
    page.setSpec(spec);
    QSignalSpy finished(&page, &LaunchPage::runFinished);
    page.start();
    QVERIFY(finished.wait(120000));
    QVERIFY(finished.first().first().toInt() != 0);
    const QString banner = page.banner()->text();
    QVERIFY2(banner.contains(QRegularExpression("Rank [01] failed")), qPrintable(banner));
    QVERIFY2(banner.contains("missing-tokens.bin: no such file"), qPrintable(banner));
  }
};

QTEST_MAIN(LaunchPageTest)
#include "launch_page_test.moc"
