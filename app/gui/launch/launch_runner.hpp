#pragma once
// Runs `shardscope launch` (or `shardscope watch`) as a child process for the Launch & Watch page:
// reads its output line by line (ranks prefixed `[rank R] `, or `[host:R] ` across hosts; the
// launcher's closing summary told apart from the ranks' output), learns the session uid and rank
// pids it announces, and stops it the way a terminal would: SIGTERM to the launcher (which
// forwards it to every rank), then SIGKILL after a grace period, then SIGKILL to any rank still
// alive, so nothing is left.

#include <QObject>
#include <QProcess>

#include "app/gui/launch/launch_spec.hpp"

class QTimer;

namespace shardscope::gui {

class LaunchRunner : public QObject {
  Q_OBJECT

 public:
  explicit LaunchRunner(QObject* parent = nullptr);
  ~LaunchRunner() override;

  /// Starts `program args` (in `working_dir` when given, with the KEY=VALUE `environment` added to
  /// the GUI's own); false when a run is already going or it cannot start (errorText: why).
  bool start(const QString& program, const QStringList& args, int world_size, const QString& working_dir = {},
             const QStringList& environment = {});
  bool isRunning() const;
  /// SIGTERM now, SIGKILL after `grace_ms` if the launcher has not exited.
  void stop(int grace_ms = 8000);
  /// Stops as stop() does but waits here (at most grace_ms + 3 s): for the window closing.
  void stopAndWait(int grace_ms = 5000);
  /// Kills the launcher and every announced rank at once.
  void killAll();
  const LaunchFacts& facts() const { return facts_; }
  QString errorText() const { return error_; }
  qint64 launcherPid() const;
  /// The pids of ranks announced by the launcher that are still alive.
  QList<qint64> liveRankPids() const;

 signals:
  void lineReceived(const shardscope::gui::ConsoleLine& line);
  void sessionAnnounced(const QString& uid);
  /// A host announced the ranks it started (facts().rank_hosts grew): a run across hosts.
  void rankHostsAnnounced();
  /// Exit code of the launcher (negative: killed by that signal); `stopped` when Stop was asked.
  void finished(int exit_code, bool stopped);

 private:
  void readChannel(QProcess::ProcessChannel channel);
  void handleLine(const QString& line, bool from_stderr);
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void killLeftoverRanks();

  QProcess* process_ = nullptr;
  QTimer* kill_timer_ = nullptr;
  LaunchFacts facts_;
  ConsoleReader reader_;
  QByteArray pending_[2];
  bool stop_requested_ = false;
  QString error_;
};

}  // namespace shardscope::gui

Q_DECLARE_METATYPE(shardscope::gui::ConsoleLine)
