// LaunchPage, the run itself: start, stop, the live updates and the end of the run.
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "app/gui/launch/session_poller.hpp"

namespace shardscope::gui {
namespace {

QString eta_text(double seconds) {
  const auto s = static_cast<qint64>(seconds + 0.5);
  if (s >= 3600) return QString("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
  if (s >= 60) return QString("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QString("%1 s").arg(s);
}

/// Lines as they were printed, wrapping where a line is longer than the banner (a <pre> would not
/// wrap, and its width would widen the window).
QString preformatted(const QString& text) {
  return "<p style='white-space: pre-wrap; font-family: monospace'>" + text.toHtmlEscaped() + "</p>";
}

/// A run without a step count of its own (a watched command) ends its busy bar at the steps it made.
/// None at all reads "no steps recorded", not "step 0 of 1" (a command that never started).
void end_progress_at(QProgressBar* progress, std::int64_t last_step) {
  progress->setRange(0, static_cast<int>(std::max<std::int64_t>(1, last_step)));
  progress->setValue(static_cast<int>(std::max<std::int64_t>(0, last_step)));
  progress->setFormat(last_step < 0 ? QObject::tr("no steps recorded") : QObject::tr("step %v of %m"));
}

}  // namespace

QString LaunchPage::configPathForRun() {
  if (config_source_->currentIndex() == 1) return config_file_->text().trimmed();
  if (!editor_text_) throw std::invalid_argument("Config: no Config Editor document is available; choose a file");
  // The editor's text as it is now, unsaved edits included, written atomically beside the session.
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + "/launch";
  QDir().mkpath(dir);
  const QString stem = editor_path_ && !editor_path_().isEmpty() ? QFileInfo(editor_path_()).completeBaseName()
                                                                   : QStringLiteral("editor_config");
  const QString path = dir + "/" + stem + ".json";
  QSaveFile file(path);
  const QByteArray text = editor_text_().toUtf8();
  if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit())
    throw std::invalid_argument("Config: could not write the editor's document to " + path.toStdString() + ": " +
                                file.errorString().toStdString());
  return path;
}

void LaunchPage::start() {
  if (runner_->isRunning()) return;
  if (ownCommand()) return startWatch();
  LaunchSpec s;
  std::vector<std::string> args;
  try {
    s = spec();
    s.config_path = configPathForRun().toStdString();
    if (!s.session_file.empty()) s.session_file = QFileInfo(QString::fromStdString(s.session_file)).absoluteFilePath().toStdString();
    args = launch_arguments(s);
  } catch (const std::exception& e) {
    showBanner(tr("<b>Cannot start:</b> %1").arg(QString::fromStdString(e.what()).toHtmlEscaped()), true);
    return;
  }
  // The launcher creates the session file but not its folder.
  QDir().mkpath(QFileInfo(QString::fromStdString(s.session_file)).absolutePath());
  running_ = s;
  watching_ = false;
  // Across hosts the ranks are known once each host announces them (onRankHosts).
  const int world_size = s.hostfile.empty() ? s.processes : 0;
  resetWatchSide(world_size, s.steps);
  saveSettings();
  if (!startCli(args, world_size)) return;
  const QString where = s.hostfile.empty() ? tr("%1 rank(s)").arg(s.processes)
                                           : tr("on the hosts of %1").arg(QString::fromStdString(s.hostfile).toHtmlEscaped());
  showBanner(tr("Running %1 for %2 steps into %3\u2026")
                 .arg(where)
                 .arg(s.steps)
                 .arg(QString::fromStdString(s.session_file).toHtmlEscaped()),
             false);
}

void LaunchPage::resetWatchSide(int world_size, int steps) {
  session_uid_.clear();
  heat_map_session_ = 0;
  doctor_html_.clear();
  end_note_.clear();
  console_->clear();
  console_->resetFilters();  // a new run shows all its lines: last run's filter would hide them
  console_->setWorldSize(world_size);
  showRankLegend(world_size);
  plots_->clear();
  plots_->setRunKind(ownCommand() ? LivePlots::RunKind::Watched : LivePlots::RunKind::Engine);
  progress_->setRange(0, steps);  // 0..0: a busy bar, for a command whose step count is its own
  progress_->setValue(0);
  progress_->setFormat(tr("step %v of %m"));
  eta_->clear();
  open_session_->setEnabled(false);
}

bool LaunchPage::startCli(const std::vector<std::string>& args, int world_size, const QString& working_dir,
                          const std::vector<std::string>& environment) {
  QStringList qargs, qenv;
  for (const auto& a : args) qargs << QString::fromStdString(a);
  for (const auto& e : environment) qenv << QString::fromStdString(e);
  const QString program = shardscope_cli_path();
  const std::string command = shell_command(program.toStdString(), args);
  console_->append({-1, LineLevel::kInfo, environment.empty() ? command : shell_command("env", environment) + " " + command, {}});
  if (!runner_->start(program, qargs, world_size, working_dir, qenv)) {
    showBanner(tr("<b>Cannot start:</b> %1").arg(cli_missing_message(program, runner_->errorText()).toHtmlEscaped()), true);
    return false;
  }
  clock_.start();
  start_->setEnabled(false);
  stop_->setEnabled(true);
  emit statusMessage(tr("Started %1 (pid %2)").arg(QString::fromStdString("shardscope " + args.front())).arg(runner_->launcherPid()));
  emit runStarted();
  return true;
}

void LaunchPage::stop() {
  if (!runner_->isRunning()) return;
  showBanner(tr("Stopping: SIGTERM sent to the launcher, which stops every rank\u2026"), false);
  runner_->stop();
}

bool LaunchPage::isRunning() const { return runner_->isRunning(); }

void LaunchPage::shutdown() {
  runner_->stopAndWait();
  poller_->stop();
}

void LaunchPage::onUpdate(const LiveUpdate& update) {
  if (!update.error.empty()) emit statusMessage(tr("Reading the session: %1").arg(QString::fromStdString(update.error)));
  plots_->append(update);
  if (update.alarm) showDoctorAlarm(*update.alarm);
  if (update.session_id) refreshHeatMap(update.session_id);
  if (plots_->lastStep() >= 0 && running_.steps == 0 && !runner_->isRunning()) {
    end_progress_at(progress_, plots_->lastStep());  // a watched command's last steps come with the final read
  } else if (plots_->lastStep() >= 0 && running_.steps > 0) {
    progress_->setValue(static_cast<int>(std::min<std::int64_t>(plots_->lastStep(), running_.steps)));
    if (auto ms = plots_->recentStepMs(); ms && runner_->isRunning())
      eta_->setText(tr("ETA %1").arg(eta_text(std::max<double>(0, running_.steps - plots_->lastStep()) * *ms / 1000)));
  }
}

void LaunchPage::onFinished(int exit_code, bool stopped) {
  start_->setEnabled(true);
  stop_->setEnabled(false);
  eta_->clear();
  if (running_.steps == 0) end_progress_at(progress_, plots_->lastStep());
  if (!session_uid_.isEmpty()) {
    poller_->finish();  // one last read of what the collector committed at the end
    open_session_->setEnabled(true);
  }
  const LaunchFacts& facts = runner_->facts();
  const QString elapsed = QString::number(clock_.elapsed() / 1000.0, 'f', 1);
  if (exit_code == 0) {
    if (watching_)  // its last steps are still to be read: the bar shows how many
      showBanner(tr("<b>Completed</b> in %1 s: your command exited with 0; session %2.").arg(elapsed, session_uid_.left(12)),
                 false);
    else
      showBanner(tr("<b>Completed</b> in %1 s: %2 steps; session %3.")
                     .arg(elapsed).arg(plots_->lastStep()).arg(session_uid_.left(12)), false);
  } else if (!facts.failed_who.empty()) {
    QString who = QString::fromStdString(facts.failed_who);  // "rank 1", "worker-1:3", "host worker-1"
    if (who.startsWith("rank ") || who.startsWith("host ")) who[0] = who[0].toUpper();
    showBanner(tr("<b>%1 failed</b> (exit code %2):%3")
                   .arg(who.toHtmlEscaped())
                   .arg(exit_code)
                   .arg(preformatted(QString::fromStdString(facts.failure))),
               true);
  } else if (stopped) {
    const QString where = plots_->lastStep() >= 0 ? tr("at step %1").arg(plots_->lastStep()) : tr("before its first step");
    showBanner(tr("<b>Stopped</b> after %1 s %2; every rank was ended.").arg(elapsed, where),
               false);
  } else {
    // No rank was named: the launcher itself refused (bad flag, config error), or a watched command
    // failed; the last lines before the closing summary say why.
    QStringList last;
    const auto* model = console_->model();
    for (int r = model->rowCount() - 1; r >= 0 && last.size() < 6; --r)
      if (!model->index(r).data(RankLogModel::kSummaryRole).toBool()) last.prepend(model->index(r).data().toString());
    // Watch refusing to start the command (not on PATH, no config among its arguments) is not the command failing.
    const bool refused = watching_ && session_uid_.isEmpty() && exit_code == 2;
    showBanner((refused     ? tr("<b>shardscope watch did not start your command</b> (exit code %1):%2")
                : watching_ ? tr("<b>Your command failed</b> (exit code %1):%2")
                            : tr("<b>The launch failed</b> (exit code %1):%2"))
                   .arg(exit_code)
                   .arg(preformatted(last.join('\n'))),
               true);
  }
  // The doctor's culprit stays named, with how the run ended under it; its finding may also come
  // with the final read after the launcher's exit, and then takes this note along.
  end_note_ = tr("<p><i>The run ended with exit code %1%2.</i></p>").arg(exit_code)
                  .arg(exit_code == 124 ? tr(": the launcher stopped every rank (--on-hang stop)") : QString());
  if (!doctor_html_.isEmpty()) showBanner(doctor_html_ + end_note_, true);
  emit statusMessage(tr("Run ended with exit code %1").arg(exit_code));
  emit runFinished(exit_code);
}

void LaunchPage::showBanner(const QString& html, bool error) {
  banner_->setText(html);
  banner_->setStyleSheet(error ? "QLabel { background: #fde2e1; color: #7a0b0b; padding: 4px; }"
                               : "QLabel { padding: 4px; }");
}

}  // namespace shardscope::gui
