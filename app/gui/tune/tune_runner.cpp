#include "app/gui/tune/tune_runner.hpp"

#include <signal.h>
#include <sys/types.h>

#include <optional>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>
#include <QTimer>

namespace shardscope::gui {
namespace {

struct ProcStat {
  qint64 ppid = 0;
  char state = '?';
};

std::optional<ProcStat> read_stat(qint64 pid) {
  QFile file(QString("/proc/%1/stat").arg(pid));
  if (!file.open(QIODevice::ReadOnly)) return std::nullopt;
  const QByteArray s = file.readAll();
  const int close = s.lastIndexOf(')');  // the command name may hold spaces and parentheses
  if (close < 0 || close + 2 >= s.size()) return std::nullopt;
  const QList<QByteArray> fields = s.mid(close + 2).split(' ');
  if (fields.size() < 2) return std::nullopt;
  return ProcStat{fields[1].toLongLong(), fields[0].isEmpty() ? '?' : fields[0][0]};
}

// A pid is one of the tuner's processes only while it still runs a shardscope binary: after it
// exits its pid may be reused by an unrelated process, which must never be signalled.
bool is_live_shardscope(qint64 pid) {
  const auto stat = read_stat(pid);
  if (!stat || stat->state == 'Z') return false;  // gone, or exited and waiting for its parent
  return QFileInfo(QString("/proc/%1/exe").arg(pid)).symLinkTarget().contains("shardscope");
}

}  // namespace

QString tune_run_uid_in_line(const QString& line) {
  static const QRegularExpression kAnnounce(R"(^shardscope tune: (?:resuming )?tune run ([0-9a-f]+) (?:in|of) )");
  const auto match = kAnnounce.match(line);
  return match.hasMatch() ? match.captured(1) : QString();
}

QList<qint64> descendant_pids(qint64 root) {
  QHash<qint64, QList<qint64>> children;
  for (const QString& entry : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    const qint64 pid = entry.toLongLong(&numeric);
    if (!numeric) continue;
    if (const auto stat = read_stat(pid)) children[stat->ppid] << pid;
  }
  QList<qint64> out, frontier{root};
  while (!frontier.isEmpty()) {
    const qint64 pid = frontier.takeFirst();
    for (qint64 child : children.value(pid)) {
      out << child;
      frontier << child;
    }
  }
  return out;
}

TuneRunner::TuneRunner(QObject* parent) : QObject(parent) {
  kill_timer_ = new QTimer(this);
  kill_timer_->setSingleShot(true);
  connect(kill_timer_, &QTimer::timeout, this, [this] {
    rememberTree();
    if (isRunning()) process_->kill();
  });
  tree_timer_ = new QTimer(this);
  connect(tree_timer_, &QTimer::timeout, this, &TuneRunner::rememberTree);
}

TuneRunner::~TuneRunner() {
  if (isRunning()) {
    rememberTree();
    process_->kill();
    process_->waitForFinished(3000);
  }
  killLeftovers();
}

bool TuneRunner::start(const QString& program, const QStringList& args) {
  if (isRunning()) {
    error_ = tr("The tuner is already running; stop it first.");
    return false;
  }
  delete process_;
  process_ = new QProcess(this);
  pending_[0].clear();
  pending_[1].clear();
  tree_.clear();
  stop_requested_ = announced_ = false;
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] { readChannel(QProcess::StandardOutput); });
  connect(process_, &QProcess::readyReadStandardError, this, [this] { readChannel(QProcess::StandardError); });
  connect(process_, &QProcess::finished, this, &TuneRunner::onFinished);
  process_->start(program, args);
  if (!process_->waitForStarted(10000)) {
    error_ = process_->errorString();
    return false;
  }
  tree_timer_->start(1000);
  return true;
}

bool TuneRunner::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }

qint64 TuneRunner::tunerPid() const { return process_ ? process_->processId() : 0; }

void TuneRunner::stop(int grace_ms) {
  if (!isRunning()) return;
  stop_requested_ = true;
  rememberTree();
  process_->terminate();  // SIGTERM: the tuner stops its trial's launch, which stops every rank
  kill_timer_->start(grace_ms);
}

void TuneRunner::stopAndWait(int grace_ms) {
  if (!isRunning()) return;
  stop();
  if (!process_->waitForFinished(grace_ms)) {
    rememberTree();
    process_->kill();
    process_->waitForFinished(3000);
  }
  killLeftovers();
}

void TuneRunner::rememberTree() {
  if (!isRunning()) return;
  for (qint64 pid : descendant_pids(process_->processId()))
    if (!tree_.contains(pid)) tree_ << pid;
}

QList<qint64> TuneRunner::liveTreePids() const {
  QList<qint64> live;
  for (qint64 pid : tree_)
    if (is_live_shardscope(pid)) live << pid;
  return live;
}

void TuneRunner::killLeftovers() {
  for (qint64 pid : liveTreePids()) ::kill(static_cast<pid_t>(pid), SIGKILL);
}

void TuneRunner::readChannel(QProcess::ProcessChannel channel) {
  const int c = channel == QProcess::StandardOutput ? 0 : 1;
  pending_[c] += c == 0 ? process_->readAllStandardOutput() : process_->readAllStandardError();
  int newline;
  while ((newline = pending_[c].indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(pending_[c].left(newline));
    pending_[c].remove(0, newline + 1);
    emit lineReceived(line);
    const QString uid = announced_ ? QString() : tune_run_uid_in_line(line);
    if (!uid.isEmpty()) {
      announced_ = true;
      emit runAnnounced(uid);
    }
  }
}

void TuneRunner::onFinished(int exit_code, QProcess::ExitStatus status) {
  for (int c = 0; c < 2; ++c)
    if (!pending_[c].isEmpty()) emit lineReceived(QString::fromUtf8(pending_[c]));
  pending_[0].clear();
  pending_[1].clear();
  kill_timer_->stop();
  tree_timer_->stop();
  // A clean stop leaves nothing; a killed tuner's trial ends through PR_SET_PDEATHSIG, and
  // whatever of its tree is still alive (a rank that ignored its launcher) ends here.
  killLeftovers();
  emit finished(status == QProcess::CrashExit ? -SIGKILL : exit_code, stop_requested_);
}

}  // namespace shardscope::gui
