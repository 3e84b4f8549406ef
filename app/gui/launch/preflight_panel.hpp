#pragma once
// The preflight of "these hosts" on the Launch & Watch page: runs `shardscope launch --preflight
// --json --hostfile F ...` through the CLI locator in a QProcess (the UI never waits on it) and
// shows its report as a table: host, reachable, shardscope version, GPUs against slots (or CPU
// ranks), /dev/shm, the master port, status and the fix of each problem, failures in red; under it
// the all-reduce across every rank with its bus bandwidth and the exit status. The panel is the
// table and its summary; its button goes where the page puts it (the hosts section of the form).

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

class QLabel;
class QProcess;
class QPushButton;
class QTableWidget;

namespace shardscope::gui {

struct PreflightRow {
  QString host;
  bool reachable = false;
  QString version;     ///< "0.4.0 (1a2b3c4d5e)" or "-"
  QString ranks;       ///< "2 x NVIDIA H200 (2)" (GPUs, slots used) or "1 CPU"
  QString shm;         ///< /dev/shm size or "-"
  QString port;        ///< "free", "in use" or "-"
  bool ok = false;
  QStringList problems;  ///< each with its fix
  QStringList warnings;
};

struct PreflightResult {
  bool ok = false;
  bool cpu = false;
  int master_port = 0;
  std::vector<PreflightRow> rows;
  QString allreduce;          ///< "16 MiB over gloo, 2 rank(s): 1.234 ms, busbw 0.567 GB/s", or empty
  QString allreduce_problem;  ///< why it did not run or failed, or empty
};

/// Reads the JSON `shardscope launch --preflight --json` prints (schema shardscope.preflight/1,
/// launcher/preflight.cpp's preflight_to_json). Throws std::invalid_argument when it is not that.
PreflightResult parse_preflight_json(const std::string& text);

class PreflightPanel : public QWidget {
  Q_OBJECT

 public:
  /// `arguments` gives the CLI arguments of the check (after `shardscope`); it throws
  /// std::invalid_argument naming a bad field.
  explicit PreflightPanel(std::function<std::vector<std::string>()> arguments, QWidget* parent = nullptr);
  ~PreflightPanel() override;

  /// Starts the check (nothing when one is running).
  void run();
  bool isRunning() const;
  /// The Preflight button, not laid out: the page places it.
  QPushButton* button() const { return button_; }
  QTableWidget* table() const { return table_; }
  QLabel* summary() const { return summary_; }
  const PreflightResult& result() const { return result_; }

 signals:
  /// A check started (the page shows the panel).
  void started();
  /// The CLI's exit status (0: every host passed, 1: a host failed, 2: bad flags; -1: it crashed).
  void finished(int exit_code);

 private:
  void onFinished(int exit_code);
  void showResult(int exit_code);
  void showSummary(const QString& html, bool error);

  std::function<std::vector<std::string>()> arguments_;
  QPushButton* button_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* summary_ = nullptr;
  QProcess* process_ = nullptr;
  PreflightResult result_;
};

}  // namespace shardscope::gui
