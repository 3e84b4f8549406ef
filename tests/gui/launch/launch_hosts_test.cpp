// "These hosts" on the Launch & Watch page: the hostfile editor (checked by configs' parser with
// DeepSpeed's words and line, saved atomically), the node selection flags in the launch and
// preflight argument lists and the CLI twin, the preflight table from the JSON the real CLI prints
// for an unreachable host, and `host:rank` labels from the multi-host launcher's lines.

#include <algorithm>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/hostfile_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_spec.hpp"
#include "app/gui/launch/preflight_panel.hpp"
#include "app/gui/launch/rank_console.hpp"

using namespace shardscope::gui;

namespace {

bool has_pair(const std::vector<std::string>& v, const std::string& flag, const std::string& value) {
  for (std::size_t i = 0; i + 1 < v.size(); ++i)
    if (v[i] == flag && v[i + 1] == value) return true;
  return false;
}

QString read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class LaunchHostsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardScopeLaunchHostsTest");
    QSettings().clear();
    qputenv("SHARDSCOPE_CLI", SHARDSCOPE_CLI_PATH);
    QVERIFY(dir_.isValid());
  }

  void hostsSpecGivesDeepSpeedsRunnerFlags() {
    LaunchSpec s;
    s.config_path = "/c/ds.json";
    s.session_file = "/s/runs.db";
    s.hostfile = "/h/hostfile";
    s.processes = 2;
    s.num_nodes = 2;
    s.exclude = "worker-1:0";
    s.launcher = "pdsh";
    s.ssh_port = 2222;
    s.master_addr = "10.0.0.1";
    s.master_port = 29611;
    const auto args = launch_arguments(s);
    const std::vector<std::string> head = {"launch", "--hostfile", "/h/hostfile", "--num_nodes", "2", "--num_procs", "2",
                                           "--exclude", "worker-1:0", "--launcher", "pdsh", "--ssh_port", "2222",
                                           "--session", "/s/runs.db"};
    QCOMPARE(std::vector<std::string>(args.begin(), args.begin() + long(head.size())), head);
    QVERIFY(has_pair(args, "--master_addr", "10.0.0.1") && has_pair(args, "--master_port", "29611"));
    // GPUs: every slot unless a count or an --include is given.
    s.use_gpus = true;
    s.processes = 0;
    s.launcher.clear();
    auto gpu = launcher_arguments(s);
    QVERIFY(std::find(gpu.begin(), gpu.end(), "--num_gpus") == gpu.end());
    QVERIFY(std::find(gpu.begin(), gpu.end(), "--launcher") == gpu.end());  // ssh: the default, left out
    s.include = "worker-0@worker-1:0,2";
    QVERIFY(has_pair(launcher_arguments(s), "--include", "worker-0@worker-1:0,2"));
    s.include.clear();
    s.processes = 4;
    QVERIFY(has_pair(launcher_arguments(s), "--num_gpus", "4"));
    // The preflight: the same selection, no session, JSON.
    const auto pre = preflight_arguments(s);
    QCOMPARE(std::vector<std::string>(pre.begin(), pre.begin() + 5),
             (std::vector<std::string>{"launch", "--preflight", "--json", "--hostfile", "/h/hostfile"}));
    QVERIFY(has_pair(pre, "--num_gpus", "4") && has_pair(pre, "--master_port", "29611"));
    QVERIFY(std::find(pre.begin(), pre.end(), "--session") == pre.end());
    s.launcher = "mpirun";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch_arguments(s));
    s.hostfile.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, preflight_arguments(s));
  }

  void pageRoundTripsTheHostsFields() {
    LaunchPage page;
    page.setUseEditorConfig(false);
    LaunchSpec s;
    s.config_path = "/c/ds.json";
    s.session_file = dir_.filePath("runs.db").toStdString();
    s.hostfile = dir_.filePath("hosts").toStdString();
    s.processes = 3;
    s.num_nodes = 1;
    s.exclude = "b";
    s.launcher = "pdsh";
    s.ssh_port = 2200;
    s.launcher_args = "-F /lab/ssh_config";
    page.setSpec(s);
    const LaunchSpec back = page.spec();
    QCOMPARE(back.hostfile, s.hostfile);
    QCOMPARE(back.num_nodes, 1);
    QCOMPARE(back.exclude, std::string("b"));
    QCOMPARE(back.launcher, std::string("pdsh"));
    QCOMPARE(back.ssh_port, 2200);
    QCOMPARE(back.launcher_args, std::string("-F /lab/ssh_config"));
    QCOMPARE(back.processes, 3);
    QCOMPARE(launch_arguments(back), launch_arguments(s));
    QVERIFY2(page.cliTwin()->text().contains("--hostfile " + dir_.filePath("hosts")), qPrintable(page.cliTwin()->text()));
    QVERIFY(page.cliTwin()->text().contains("--launcher pdsh --ssh_port 2200 --launcher_args '-F /lab/ssh_config'"));
    // Back to this machine: no hostfile flag.
    page.setWhere(0);
    QVERIFY(page.spec().hostfile.empty());
    QVERIFY(!page.cliTwin()->text().contains("--hostfile"));
  }

  void editorChecksAsDeepSpeedAndSavesAtomically() {
    HostfileEditor editor;
    const QString path = dir_.filePath("edited_hostfile");
    editor.setPath(path);
    editor.editor()->setPlainText("# two workers\nworker-0 slots=2\nworker-1 slots=4\n");
    QVERIFY(editor.check().ok);
    QCOMPARE(editor.check().hosts, 2);
    QCOMPARE(editor.check().total_slots, 6);
    editor.editor()->setPlainText("worker-0 slots=2\nworker-1 slots=4\nworker-0 slots=1\n");
    QVERIFY(!editor.check().ok);
    QCOMPARE(editor.check().error_line, 3);
    QVERIFY2(editor.status()->text().contains(path + ":3: Hostfile contains multiple entries for worker-0"),
             qPrintable(editor.status()->text()));
    editor.editor()->setPlainText("worker-0 slots=2\nworker-1 gpus=4\n");
    QCOMPARE(editor.check().error_line, 2);
    QVERIFY(editor.status()->text().contains("Hostfile contains a bad entry: worker-1 gpus=4"));
    editor.editor()->setPlainText("# none\n");
    QVERIFY(editor.status()->text().contains("Hostfile is empty or not formatted correctly"));
    // Save writes the text as typed (comments kept), Open reads it back.
    const QString text = "# lab\nnode-a slots=1\n";
    editor.editor()->selectAll();
    editor.editor()->insertPlainText(text);  // typed, not loaded: unsaved until Save
    QVERIFY(editor.isModified());
    QVERIFY(editor.status()->text().contains("unsaved"));
    QVERIFY(editor.saveTo(path));
    QVERIFY(!editor.isModified());
    QCOMPARE(read_all(path), text);
    QVERIFY(QDir(dir_.path()).entryList({"edited_hostfile.*"}, QDir::Files | QDir::Hidden).isEmpty());  // no temp left
    HostfileEditor other;
    QVERIFY(other.openFile(path));
    QCOMPARE(other.editor()->toPlainText(), text);
    QCOMPARE(other.path(), path);
    // A folder that does not exist: the save fails, says so, and the old file stays.
    QVERIFY(!other.saveTo(dir_.filePath("no/such/dir/hostfile")));
    QVERIFY(other.status()->text().contains("could not write"));
    QVERIFY(!other.openFile(dir_.filePath("missing")));
    QVERIFY(other.status()->text().contains("cannot open"));
  }

  void preflightTableFromTheRealCli() {
    if (QStandardPaths::findExecutable("ssh").isEmpty()) QSKIP("no ssh client: the launcher reaches hosts with ssh");
    const QString hostfile = dir_.filePath("unreachable_hostfile");
    QString error;
    QVERIFY2(save_text_atomically(hostfile, "# a host no resolver knows: ssh fails at once\nnosuchhost.invalid slots=1\n",
                                  &error), qPrintable(error));
    LaunchPage page;
    page.setWhere(2);
    page.hostfileEditor()->openFile(hostfile);
    QSignalSpy finished(page.preflight(), &PreflightPanel::finished);
    page.preflight()->run();
    QVERIFY(page.preflight()->isRunning());  // a QProcess: the page did not wait for it
    QVERIFY(!page.preflight()->button()->isEnabled());
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().toInt(), 1);  // a host failed
    const PreflightResult& r = page.preflight()->result();
    QVERIFY2(r.rows.size() == 1, qPrintable(page.preflight()->summary()->text()));
    QCOMPARE(r.rows[0].host, QString("nosuchhost.invalid"));
    QVERIFY(!r.rows[0].reachable && !r.rows[0].ok);
    QVERIFY(r.rows[0].problems.join(' ').contains("not reachable"));
    QVERIFY(r.cpu);
    auto* table = page.preflight()->table();
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 0)->text(), QString("nosuchhost.invalid"));
    QCOMPARE(table->item(0, 1)->text(), QString("no"));
    QVERIFY(table->item(0, 6)->text().startsWith("FAILED"));
    QVERIFY(table->item(0, 6)->text().contains("ssh nosuchhost.invalid true"));  // the fix
    QCOMPARE(table->item(0, 0)->foreground().color(), QColor(176, 0, 32));
    QVERIFY(page.preflight()->summary()->text().contains("Preflight FAILED"));
    QVERIFY(page.preflight()->summary()->text().contains("exit status 1"));
    // The table is what the CLI printed: the same run's JSON parsed directly gives the same rows.
    QProcess cli;
    QStringList args;
    for (const auto& a : preflight_arguments(page.spec())) args << QString::fromStdString(a);
    cli.start(SHARDSCOPE_CLI_PATH, args);
    QVERIFY(cli.waitForFinished(60000));
    const PreflightResult direct = parse_preflight_json(cli.readAllStandardOutput().toStdString());
    QCOMPARE(direct.rows.size(), r.rows.size());
    QCOMPARE(direct.rows[0].problems, r.rows[0].problems);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_preflight_json("{\"hosts\": []}"));
  }

  void preflightWithoutHostfileSaysWhy() {
    LaunchPage page;
    page.setWhere(2);
    page.hostfileEditor()->setPath(QString());
    page.preflight()->run();
    QVERIFY(!page.preflight()->isRunning());
    QVERIFY2(page.preflight()->summary()->text().contains("Hostfile: open a hostfile"),
             qPrintable(page.preflight()->summary()->text()));
  }

  void ranksAreLabelledHostColonRank() {
    auto line = parse_console_line("[worker-1:3] step 5 loss 2.1", false);
    QCOMPARE(line.rank, 3);
    QCOMPARE(line.host, std::string("worker-1"));
    QCOMPARE(line.text, std::string("step 5 loss 2.1"));
    QCOMPARE(parse_console_line("[fe80::1:2] hi", false).host, std::string("fe80::1"));
    QCOMPARE(parse_console_line("[rank 2] hi", false).host, std::string());
    QCOMPARE(parse_console_line("shardscope launch: [worker-1] rank 2 pid 5 (cpu)", false).rank, -1);
    LaunchFacts facts;
    read_launcher_line("shardscope launch: session 63af905c41fab76d in /r/runs.db, collector at 10.0.0.1:4000", facts);
    read_launcher_line("shardscope launch: [worker-0] rank 0 pid 101 (cpu), rank 1 pid 102 (cpu)", facts);
    read_launcher_line("shardscope launch: [worker-1] rank 2 pid 201 (cpu), rank 3 pid 202 (cpu)", facts);
    QCOMPARE(facts.session_uid, std::string("63af905c41fab76d"));
    QCOMPARE(facts.rank_hosts, (std::map<int, std::string>{{0, "worker-0"}, {1, "worker-0"}, {2, "worker-1"}, {3, "worker-1"}}));
    QVERIFY(facts.rank_pids.empty());  // pids of other machines: never signalled from here
    read_launcher_line("shardscope launch: worker-1:3 (pid 202) was killed by signal 9 (SIGKILL) (the first failure); "
                       "the launcher stopped worker-0:0,worker-0:1,worker-1:2. Exit code 137.", facts);
    read_launcher_line("shardscope launch: last lines of worker-1:3's stderr:", facts);
    QCOMPARE(facts.failed_who, std::string("worker-1:3"));
    QCOMPARE(facts.failed_rank, std::optional<int>(3));
    QVERIFY(facts.failure.find("last lines of worker-1:3") != std::string::npos);
    LaunchFacts lost;
    read_launcher_line("shardscope launch: host worker-1 became unreachable: its agent's connection dropped (the first "
                       "failure). Exit code 1.", lost);
    QCOMPARE(lost.failed_who, std::string("host worker-1"));
    QVERIFY(!lost.failed_rank);
    // The console shows and filters by host:rank.
    RankConsole console;
    console.setRanks(4, facts.rank_hosts);
    console.append(parse_console_line("[worker-1:3] boom", true));
    console.append(parse_console_line("[worker-0:0] fine", false));
    QCOMPARE(console.filter()->index(0, 0).data().toString(), QString("[worker-1:3] boom"));
    QVERIFY(console.setRankFilter("0"));
    QCOMPARE(console.filter()->rowCount(), 1);
    QCOMPARE(console.filter()->index(0, 0).data().toString(), QString("[worker-0:0] fine"));
    QVERIFY(console.setRankFilter("worker-1"));  // a host: its ranks' lines
    QCOMPARE(console.filter()->rowCount(), 1);
    QCOMPARE(console.filter()->index(0, 0).data().toString(), QString("[worker-1:3] boom"));
  }
};

QTEST_MAIN(LaunchHostsTest)
#include "launch_hosts_test.moc"
