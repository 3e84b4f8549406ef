// shardscope-gui-screenshots: renders the workbench's pages with real content, offscreen
// (QT_QPA_PLATFORM=offscreen), into PNG files for docs/gui.md and the README.
//
//   shardscope-gui-screenshots SOURCE_DIR OUTPUT_DIR
//       every page: a Llama-2-7B config.json on 8 x H100 (Estimator), a template with mistakes
//       (Config Editor), and two real 2-rank CPU trainings of a small GPT-2 started through the
//       Launch page (Launch & Watch, Sessions & Compare, and the profile view of the second, which
//       records timers, collectives and a profiled window). The CLI comes from $SHARDSCOPE_CLI.
//   shardscope-gui-screenshots --launch-modes SOURCE_DIR OUTPUT_DIR
//       only Launch & Watch's two other modes (also part of every page): "these hosts" with a
//       hostfile of two hosts no resolver knows and the real preflight's table of them, and "your
//       own command" with a real DeepSpeed run (tests/sessions/deepspeed/train_tiny.py on 2 CPU
//       ranks, DeepSpeed from $SHARDSCOPE_VENV) followed to its end under `shardscope watch`.
//   shardscope-gui-screenshots --profile SESSION_FILE [--run SELECTOR] [--pane TITLE] --output FILE.png
//       the profile view of one recorded session (the newest, or SELECTOR: id, uid prefix, name),
//       e.g. a session brought back from a GPU machine, with the analyses pane TITLE in front
//       ("Phases" by default, "Top kernels", "Comm overlap", ...).
//   shardscope-gui-screenshots --compare SESSION_FILE --run S1 --run S2 [...] [--tab TITLE] [--trend METRIC --by G] --output FILE.png
//       Sessions & Compare on those sessions of the file (S1 the baseline), the tab TITLE in front
//       ("Curves" by default, "Summary", "Verdict", "Trend", "Run", "Config diff", ...); the Trend tab
//       follows METRIC (step_time) grouped by G (tag, version, date, session; default tag).
#include <optional>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/launch/hostfile_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/launch/preflight_panel.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

using namespace shardscope::gui;
namespace ss = shardscope::sessions;
namespace est = shardscope::estimator;

namespace {

const QSize kShotSize(1440, 900);

bool save_page(MainWindow& window, const QString& title, const QString& path) {
  window.showPage(title);
  QTest::qWait(200);  // layouts and queued replots settle
  const bool ok = window.grab().save(path);
  qInfo("%s %s", ok ? "wrote" : "FAILED to write", qPrintable(path));
  return ok;
}

void wait_until_quiet(QObject* sender, const char* signal, int first_ms, int quiet_ms) {
  QSignalSpy spy(sender, signal);
  if (spy.wait(first_ms))
    while (spy.wait(quiet_ms)) {
    }
}

// Runs `spec` through the Launch page and waits for its end; true when it completed.
bool run_launch(LaunchPage* page, const LaunchSpec& spec) {
  page->setUseEditorConfig(false);
  page->setSpec(spec);
  QSignalSpy finished(page, &LaunchPage::runFinished);
  page->start();
  if (!finished.wait(900000) || finished.first().first().toInt() != 0) {
    qWarning("run %s failed: %s", spec.name.c_str(), qPrintable(page->banner()->text()));
    return false;
  }
  QTest::qWait(1500);  // the poller's last reads
  return true;
}

bool write_file(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

void shoot_estimator(MainWindow& window, const QString& source) {
  auto* estimator = window.findChild<EstimatorPage*>();
  est::EstimateRequest r;
  r.source = est::ModelSource::kHfConfig;
  r.hf_config = (source + "/tests/estimator/data/hf/llama-2-7b.json").toStdString();
  r.config = (source + "/configs/templates/zero2_bf16.json").toStdString();
  r.gpus_per_node = 8;
  r.gpu = "H100-80GB";
  r.cpu_memory_bytes = 1024 * est::kGiB;
  estimator->setRequest(r);
  wait_until_quiet(estimator, SIGNAL(estimateUpdated()), 10000, 1500);
  if (!estimator->view().error.empty()) qWarning("estimate failed: %s", estimator->view().error.c_str());
}

void shoot_config_editor(MainWindow& window) {
  auto* editor = window.findChild<ConfigEditorPage*>();
  editor->newFromTemplate("zero2_bf16");
  QString text = editor->editor()->toPlainText();
  text.replace("\"overlap_comm\"", "\"overlap_comms\"");  // a typo the validator names
  text.replace("{\n  \"train_micro", "{\n  \"train_batch_size\": 64,\n  \"train_micro");  // 4 x 1 x 8 = 32
  editor->editor()->setPlainText(text);
  editor->setWorldSize(8);
  editor->validateNow();
}

// Two real runs that differ in learning rate, ZeRO stage and hidden size; the second records a
// profiled window. Then Launch & Watch, the comparison and the second run's profile.
bool shoot_runs(MainWindow& window, const QString& out) {
  QTemporaryDir dir;
  const QByteArray base = R"({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0, "steps_per_print": 20, "wall_clock_breakdown": true,
    "comms_logger": {"enabled": true, "verbose": false, "prof_all": true},
    "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 120, "warmup_num_steps": 15}},)";
  const QString a = dir.filePath("zero1_lr2e-3.json"), b = dir.filePath("zero2_lr6e-4.json");
  if (!write_file(a, base + R"("optimizer": {"type": "AdamW", "params": {"lr": 2e-3}}, "zero_optimization": {"stage": 1}})") ||
      !write_file(b, base + R"("optimizer": {"type": "AdamW", "params": {"lr": 6e-4}}, "zero_optimization": {"stage": 2}})"))
    return false;
  auto* launch = window.findChild<LaunchPage*>();
  window.showPage("Launch & Watch");
  LaunchSpec spec;
  spec.layers = 2;
  spec.hidden = 128;
  spec.heads = 4;
  spec.seq_len = 64;
  spec.vocab = 512;
  spec.processes = 2;
  spec.steps = 120;
  // Not the default 29500, which tests running beside the renders may hold (a run failed on it).
  spec.master_port = 29571;
  spec.session_file = dir.filePath("runs.db").toStdString();
  spec.config_path = a.toStdString();
  spec.name = "zero1 lr 2e-3";
  if (!run_launch(launch, spec)) return false;
  spec.config_path = b.toStdString();
  spec.name = "zero2 lr 6e-4 hidden 96";
  spec.hidden = 96;
  spec.profile_start = 60;
  spec.profile_count = 3;
  if (!run_launch(launch, spec)) return false;
  bool ok = save_page(window, "Launch & Watch", out + "/launch_watch.png");
  auto* sessions = window.findChild<SessionsPage*>();
  QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
  sessions->openFiles({QString::fromStdString(spec.session_file)});
  loaded.wait(10000);
  sessions->selectByName({"zero1 lr 2e-3", "zero2 lr 6e-4 hidden 96"});
  ss::Smoothing ema;
  ema.kind = ss::SmoothingKind::kEma;
  ema.weight = 0.6;
  sessions->setSmoothing(ema);
  sessions->compareSelected();
  wait_until_quiet(sessions, SIGNAL(curvesDrawn()), 20000, 1500);
  sessions->showTab("Curves");
  ok = save_page(window, "Sessions & Compare", out + "/sessions_compare.png") && ok;
  sessions->showTab("Summary");
  ok = save_page(window, "Sessions & Compare", out + "/sessions_summary.png") && ok;
  sessions->showTab("Run");
  ok = save_page(window, "Sessions & Compare", out + "/sessions_run_diff.png") && ok;
  sessions->selectByName({"zero2 lr 6e-4 hidden 96"});
  QSignalSpy profiled(sessions->profileView(), &ProfileView::profileLoaded);
  sessions->profileSelected();
  profiled.wait(20000);
  return save_page(window, "Sessions & Compare", out + "/profile_cpu.png") && ok;
}

// Scrolls the form so that `widget` shows.
void scroll_to(QWidget* widget) {
  for (QWidget* w = widget->parentWidget(); w; w = w->parentWidget())
    if (auto* area = qobject_cast<QScrollArea*>(w)) return area->ensureWidgetVisible(widget, 0, 40);
}

// "These hosts" and its preflight table (hosts no resolver knows: ssh fails at once, and honestly).
bool shoot_hosts(MainWindow& window, const QString& dir, const QString& out) {
  auto* launch = window.findChild<LaunchPage*>();
  window.showPage("Launch & Watch");
  launch->setOwnCommand(false);
  launch->setWhere(2);
  const QString hostfile = dir + "/hostfile";
  QString error;
  if (!save_text_atomically(hostfile, "# two workers of the lab\nworker-0.invalid slots=2\nworker-1.invalid slots=2\n", &error))
    return qWarning("%s", qPrintable(error)), false;
  launch->hostfileEditor()->openFile(hostfile);
  QSignalSpy finished(launch->preflight(), &PreflightPanel::finished);
  launch->preflight()->run();
  if (!finished.wait(60000)) return qWarning("the preflight did not end"), false;
  scroll_to(launch->preflight()->button());
  return save_page(window, "Launch & Watch", out + "/launch_hosts.png");
}

// A real DeepSpeed run for "your own command": the interop tests' tiny ZeRO-2 training on 2 CPU
// ranks (gloo), started by DeepSpeed's own launcher from the venv scripts/install_test_deps.sh fills.
std::optional<WatchSpec> deepspeed_command(const QString& source, const QString& dir) {
  const QString venv = qEnvironmentVariable("SHARDSCOPE_VENV", QDir::homePath() + "/.cache/shardscope/venv");
  const QString config = dir + "/ds_config.json";
  if (!QFile::exists(venv + "/bin/deepspeed") ||
      !QFile::copy(source + "/tests/sessions/deepspeed/ds_config.json", config))
    return std::nullopt;
  qputenv("DS_ACCELERATOR", "cpu");
  qputenv("OMP_NUM_THREADS", "1");
  qputenv("PATH", (venv + "/bin:").toUtf8() + qgetenv("PATH"));
  WatchSpec w;
  w.command = {(venv + "/bin/deepspeed").toStdString(), "--num_gpus", "2", "--master_port", "29561",
               (source + "/tests/sessions/deepspeed/train_tiny.py").toStdString(), "--deepspeed",
               "--deepspeed_config", config.toStdString(), "--steps", "40"};
  w.working_dir = dir.toStdString();
  return w;
}

// "Your own command": a real DeepSpeed run followed live to its end.
bool shoot_own_command(MainWindow& window, const QString& source, const QString& dir, const QString& out) {
  auto* launch = window.findChild<LaunchPage*>();
  std::optional<WatchSpec> w = deepspeed_command(source, dir);
  if (!w) return qWarning("no DeepSpeed in the venv ($SHARDSCOPE_VENV/bin/deepspeed): run scripts/install_test_deps.sh"), false;
  w->session_file = (dir + "/watched.db").toStdString();
  w->name = "deepspeed zero2 cpu";
  launch->setOwnCommand(true);
  launch->setWatchSpec(*w);
  QSignalSpy finished(launch, &LaunchPage::runFinished);
  launch->start();
  if (!finished.wait(300000) || finished.first().first().toInt() != 0)
    return qWarning("the watched command failed: %s", qPrintable(launch->banner()->text())), false;
  QTest::qWait(1500);  // the poller's last reads
  return save_page(window, "Launch & Watch", out + "/launch_command.png");
}

bool shoot_launch_modes(MainWindow& window, const QString& source, const QString& out) {
  QTemporaryDir dir;
  const bool hosts = shoot_hosts(window, dir.path(), out);
  return shoot_own_command(window, source, dir.path(), out) && hosts;
}

int shoot_every_page(const QString& source, const QString& out) {
  QDir().mkpath(out);
  MainWindow window;
  window.resize(kShotSize);
  window.show();
  shoot_estimator(window, source);
  shoot_config_editor(window);
  bool ok = save_page(window, "Estimator", out + "/estimator.png");
  ok = save_page(window, "Config Editor", out + "/config_editor.png") && ok;
  ok = shoot_runs(window, out) && ok;
  ok = shoot_launch_modes(window, source, out) && ok;
  return ok ? 0 : 1;
}

// The sessions SELECTORS name in `file` (none: the newest), with their labels as the page shows them.
std::vector<SessionRef> find_refs(const QString& file, const QStringList& selectors) {
  // Opened as the Sessions page opens it (writable: a file of an older schema is upgraded, as any
  // `shardscope sessions` command upgrades it).
  ss::Store store = ss::Store::open(file.toStdString(), {});
  const auto listed = ss::list_sessions(store);
  if (listed.empty()) throw std::runtime_error("the file holds no session");
  std::vector<std::int64_t> ids;
  for (const QString& selector : selectors) ids.push_back(ss::find_session(store, selector.toStdString()));
  if (ids.empty()) ids.push_back(listed.front().id);
  std::vector<SessionRef> refs;
  for (std::int64_t id : ids)
    refs.push_back({file.toStdString(), id, ss::load_session(store, id).info.name + " #" + std::to_string(id)});
  return refs;
}

// find_refs, its error (the file, the selector) on stderr: nullopt then.
std::optional<std::vector<SessionRef>> refs_or_warning(const QString& file, const QStringList& selectors) {
  try {
    return find_refs(file, selectors);
  } catch (const std::exception& e) {
    qWarning("%s: %s", qPrintable(file), e.what());
    return std::nullopt;
  }
}

// The Sessions page with `file` open and `refs` selected in its list, as a user would have it.
SessionsPage* open_on_sessions_page(MainWindow& window, const QString& file, const std::vector<SessionRef>& refs) {
  auto* sessions = window.findChild<SessionsPage*>();
  window.showPage("Sessions & Compare");
  QSignalSpy loaded(sessions, &SessionsPage::catalogLoaded);
  sessions->openFiles({file});
  loaded.wait(20000);
  QStringList names;
  for (const auto& ref : refs) names << QString::fromStdString(ref.label.substr(0, ref.label.rfind(" #")));
  sessions->selectByName(names);
  return sessions;
}

// The profile view of one recorded session, e.g. a session brought back from an H200 machine,
// with the analyses pane `pane` in front.
int shoot_profile(const QString& file, const QStringList& selectors, const QString& pane, const QString& output) {
  const auto refs = refs_or_warning(file, selectors.mid(0, 1));
  if (!refs) return 2;
  MainWindow window;
  window.resize(kShotSize);
  window.show();
  SessionsPage* sessions = open_on_sessions_page(window, file, *refs);
  QSignalSpy profiled(sessions->profileView(), &ProfileView::profileLoaded);
  sessions->profile(refs->front());
  if (!profiled.wait(60000)) return qWarning("the profile did not load"), 1;
  QTabWidget* panes = sessions->profileView()->panes();
  for (int i = 0; i < panes->count(); ++i)
    if (panes->tabText(i).remove('&') == pane) panes->setCurrentIndex(i);
  if (panes->tabText(panes->currentIndex()).remove('&') != pane) return qWarning("no pane \"%s\"", qPrintable(pane)), 2;
  return save_page(window, "Sessions & Compare", output) ? 0 : 1;
}

// Sessions & Compare on several sessions of one file (the first the baseline), the tab `tab` in
// front, e.g. two ZeRO stages of a GPU run.
int shoot_compare(const QString& file, const QStringList& selectors, const QString& tab, const QString& output,
                  const QString& trend_metric, const QString& trend_by) {
  if (selectors.size() < 2) return qWarning("--compare needs two --run selectors or more"), 2;
  const auto refs = refs_or_warning(file, selectors);
  if (!refs) return 2;
  MainWindow window;
  window.resize(kShotSize);
  window.show();
  SessionsPage* sessions = open_on_sessions_page(window, file, *refs);
  QSignalSpy checked(sessions, &SessionsPage::verdictReady);
  sessions->compare(*refs);
  wait_until_quiet(sessions, SIGNAL(curvesDrawn()), 20000, 1500);
  if (checked.isEmpty()) checked.wait(30000);
  if (tab == "Trend") {
    QSignalSpy trended(sessions, &SessionsPage::trendReady);
    sessions->showTrend(trend_metric, ss::trend_grouping_from_name(trend_by.toStdString()));
    trended.wait(30000);
  }
  sessions->showTab(tab);
  return save_page(window, "Sessions & Compare", output) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ShardScopeScreenshots");  // keeps the user's settings untouched
  QApplication::setApplicationName("ShardScope");
  QSettings().clear();  // every shot starts from the defaults (no files reopened from a previous run)
  QCommandLineParser parser;
  parser.setApplicationDescription("Renders the workbench's pages into PNG files (offscreen)");
  parser.addHelpOption();
  parser.addOption({"profile", "the session file whose profile view to render", "FILE"});
  parser.addOption({"launch-modes", "only Launch & Watch across hosts and with your own command"});
  parser.addOption({"compare", "the session file whose sessions (--run, twice or more) to compare", "FILE"});
  // Not --session: QApplication takes -session/--session for X11 session management.
  parser.addOption({"run", "a session of the file (id, uid prefix or name); --profile: default the newest", "SELECTOR"});
  parser.addOption({"pane", "--profile: the analyses pane in front", "TITLE", "Phases"});
  parser.addOption({"tab", "--compare: the tab in front", "TITLE", "Curves"});
  parser.addOption({"output", "the PNG --profile or --compare writes", "FILE"});
  parser.addOption({"trend", "--compare --tab Trend: the metric followed", "METRIC", "step_time"});
  parser.addOption({"by", "--compare --tab Trend: tag, version, date or session", "GROUPING", "tag"});
  parser.addPositionalArgument("source", "the repository (for the example inputs)");
  parser.addPositionalArgument("out", "the folder every page's PNG goes to");
  parser.process(app);
  if (parser.isSet("profile") || parser.isSet("compare")) {
    if (!parser.isSet("output")) return qWarning("--profile and --compare need --output FILE.png"), 2;
    if (parser.isSet("profile"))
      return shoot_profile(parser.value("profile"), parser.values("run"), parser.value("pane"), parser.value("output"));
    return shoot_compare(parser.value("compare"), parser.values("run"), parser.value("tab"), parser.value("output"),
                         parser.value("trend"), parser.value("by"));
  }
  if (parser.positionalArguments().size() != 2) {
    qWarning("usage: shardscope-gui-screenshots SOURCE_DIR OUTPUT_DIR | --profile FILE [--run S] [--pane P] --output PNG"
             " | --compare FILE --run S1 --run S2 [...] [--tab T] --output PNG");
    return 2;
  }
  if (parser.isSet("launch-modes")) {
    MainWindow window;
    window.resize(kShotSize);
    window.show();
    QDir().mkpath(parser.positionalArguments()[1]);
    return shoot_launch_modes(window, parser.positionalArguments()[0], parser.positionalArguments()[1]) ? 0 : 1;
  }
  return shoot_every_page(parser.positionalArguments()[0], parser.positionalArguments()[1]);
}
