#pragma once
// Runs `shardscope tune` as a child process for the Tune page: hands its output on line by line,
// learns the tune run's uid from the tuner's announcement ("tune run UID in FILE", or "resuming
// tune run UID of FILE"), and stops it as Ctrl-C would: SIGTERM to the tuner, which ends the running
// trial's launch (and so every rank) and writes its outputs; SIGKILL after a grace period (the
// trial's launch then gets SIGTERM from PR_SET_PDEATHSIG); and SIGKILL to any process of the
// tuner's tree still alive after it exited, so nothing outlives a stop.

#include <QList>
#include <QObject>
#include <QProcess>

class QTimer;

namespace shardscope::gui {

/// The uid in a tuner's announcement line, or "" for any other line.
QString tune_run_uid_in_line(const QString& line);

/// The pids of every live descendant of `pid` (children, their children, ...), from /proc.
QList<qint64> descendant_pids(qint64 pid);

class TuneRunner : public QObject {
  Q_OBJECT

 public:
  explicit TuneRunner(QObject* parent = nullptr);
  ~TuneRunner() override;

  /// Starts `program args`; false when the tuner is already running or cannot start (errorText: why).
  bool start(const QString& program, const QStringList& args);
  bool isRunning() const;
  /// SIGTERM now, SIGKILL after `grace_ms` when the tuner has not exited.
  void stop(int grace_ms = 20000);
  /// Stops as stop() does but waits here (at most grace_ms + 3 s): for the window closing.
  void stopAndWait(int grace_ms = 10000);
  QString errorText() const { return error_; }
  qint64 tunerPid() const;
  /// The processes of the tuner's tree seen so far (its trials' launchers and ranks) still alive.
  QList<qint64> liveTreePids() const;

 signals:
  void lineReceived(const QString& line);
  void runAnnounced(const QString& uid);
  /// The tuner's exit code (negative: killed by that signal); `stopped` when Stop was asked.
  void finished(int exit_code, bool stopped);

 private:
  void readChannel(QProcess::ProcessChannel channel);
  void rememberTree();
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void killLeftovers();

  QProcess* process_ = nullptr;
  QTimer* kill_timer_ = nullptr;
  QTimer* tree_timer_ = nullptr;
  QByteArray pending_[2];
  QList<qint64> tree_;  ///< every descendant pid seen while the tuner ran
  bool stop_requested_ = false;
  bool announced_ = false;
  QString error_;
};

}  // namespace shardscope::gui
