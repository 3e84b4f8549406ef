#include "app/gui/launch/launch_runner.hpp"

#include <signal.h>
#include <sys/types.h>

#include <QFile>
#include <QFileInfo>
#include <QTimer>

namespace shardscope::gui {
namespace {

// A pid is one of our ranks only while its command line still names shardscope: after a rank
// exits its pid may be reused by an unrelated process, which must never be signalled.
bool is_shardscope_process(qint64 pid) {
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return false;  // gone
  // A zombie (state Z) has exited and only waits for its parent; it is not left running.
  const QByteArray s = stat.readAll();
  const int close = s.lastIndexOf(')');
  if (close > 0 && close + 2 < s.size() && s[close + 2] == 'Z') return false;
  return QFileInfo(QString("/proc/%1/exe").arg(pid)).symLinkTarget().contains("shardscope");
}

}  // namespace

LaunchRunner::LaunchRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<ConsoleLine>();
  kill_timer_ = new QTimer(this);
  kill_timer_->setSingleShot(true);
  connect(kill_timer_, &QTimer::timeout, this, [this] {
    if (isRunning()) process_->kill();
    killLeftoverRanks();
  });
}

LaunchRunner::~LaunchRunner() { killAll(); }

bool LaunchRunner::start(const QString& program, const QStringList& args, int world_size, const QString& working_dir,
                         const QStringList& environment) {
  if (isRunning()) {
    error_ = tr("A run is already going; stop it first.");
    return false;
  }
  delete process_;
  process_ = new QProcess(this);
  facts_ = {};
  reader_ = ConsoleReader(world_size == 1 ? 0 : -1);  // one rank: its lines have no prefix
  pending_[0].clear();
  pending_[1].clear();
  stop_requested_ = false;
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] { readChannel(QProcess::StandardOutput); });
  connect(process_, &QProcess::readyReadStandardError, this, [this] { readChannel(QProcess::StandardError); });
  connect(process_, &QProcess::finished, this, &LaunchRunner::onFinished);
  if (!working_dir.isEmpty()) process_->setWorkingDirectory(working_dir);
  if (!environment.isEmpty()) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& entry : environment) env.insert(entry.section('=', 0, 0), entry.section('=', 1));
    process_->setProcessEnvironment(env);
  }
  process_->start(program, args);
  if (!process_->waitForStarted(10000)) {
    error_ = process_->errorString();  // the page says where the CLI was looked for
    return false;
  }
  return true;
}

bool LaunchRunner::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }

qint64 LaunchRunner::launcherPid() const { return process_ ? process_->processId() : 0; }

void LaunchRunner::stop(int grace_ms) {
  if (!isRunning()) return;
  stop_requested_ = true;
  process_->terminate();  // SIGTERM: the launcher forwards it to every rank and waits for them
  kill_timer_->start(grace_ms);
}

void LaunchRunner::stopAndWait(int grace_ms) {
  if (!isRunning()) return;
  stop_requested_ = true;
  process_->terminate();
  if (!process_->waitForFinished(grace_ms)) killAll();
  killLeftoverRanks();
}

void LaunchRunner::killAll() {
  if (isRunning()) {
    stop_requested_ = true;
    process_->kill();
    process_->waitForFinished(3000);
  }
  killLeftoverRanks();
}

QList<qint64> LaunchRunner::liveRankPids() const {
  QList<qint64> live;
  for (const auto& [rank, pid] : facts_.rank_pids)
    if (is_shardscope_process(pid)) live << pid;
  return live;
}

void LaunchRunner::killLeftoverRanks() {
  for (qint64 pid : liveRankPids()) ::kill(static_cast<pid_t>(pid), SIGKILL);
}

void LaunchRunner::readChannel(QProcess::ProcessChannel channel) {
  const int c = channel == QProcess::StandardOutput ? 0 : 1;
  pending_[c] += channel == QProcess::StandardOutput ? process_->readAllStandardOutput() : process_->readAllStandardError();
  int newline;
  while ((newline = pending_[c].indexOf('\n')) >= 0) {
    QByteArray line = pending_[c].left(newline);
    pending_[c].remove(0, newline + 1);
    // Progress bars redraw with carriage returns; keep the last state of the line.
    if (const int cr = line.lastIndexOf('\r'); cr >= 0) line = line.mid(cr + 1);
    handleLine(QString::fromUtf8(line), c == 1);
  }
}

void LaunchRunner::handleLine(const QString& text, bool from_stderr) {
  const std::string line = text.toStdString();
  const bool had_uid = !facts_.session_uid.empty();
  const std::size_t hosts_known = facts_.rank_hosts.size();
  ConsoleLine parsed = reader_.read(line, from_stderr);
  if (parsed.rank < 0 && !parsed.summary) read_launcher_line(line, facts_);  // the summary is no failure report
  if (const auto host = facts_.rank_hosts.find(parsed.rank); parsed.host.empty() && host != facts_.rank_hosts.end())
    parsed.host = host->second;
  emit lineReceived(parsed);
  if (facts_.rank_hosts.size() != hosts_known) emit rankHostsAnnounced();
  if (!had_uid && !facts_.session_uid.empty()) emit sessionAnnounced(QString::fromStdString(facts_.session_uid));
}

void LaunchRunner::onFinished(int exit_code, QProcess::ExitStatus status) {
  for (int c = 0; c < 2; ++c)
    if (!pending_[c].isEmpty()) {
      handleLine(QString::fromUtf8(pending_[c]), c == 1);
      pending_[c].clear();
    }
  kill_timer_->stop();
  // The launcher waits for its ranks; should one have outlived it (launcher killed), end it now.
  killLeftoverRanks();
  emit finished(status == QProcess::CrashExit ? -SIGKILL : exit_code, stop_requested_);
}

}  // namespace shardscope::gui
