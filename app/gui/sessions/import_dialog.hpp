#pragma once
// File > Import...: a finished DeepSpeed run as a session, with the inputs of `shardscope sessions
// import` (csv_monitor folder, TensorBoard folder, log files, ds_config.json, traces with an
// optional rank, name, tags, samples per step) and the session file to add it to. The import runs
// on a worker thread (session_import.hpp); the dialog shows its progress, then its counts and
// notes, or the library's error (which names the file and line) with nothing written.

#include <atomic>

#include <QDialog>
#include <QFutureWatcher>

#include "app/gui/sessions/session_import.hpp"

class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace shardscope::gui {

class ImportDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ImportDialog(QWidget* parent = nullptr);
  ~ImportDialog() override;

  /// The session file to import into (the Sessions page's open one, or chosen here).
  void setSessionFile(const QString& path);
  QString sessionFile() const;
  /// Fills every field from `request` (for tests and for repeating an import).
  void setRequest(const ImportRequest& request);
  /// The request the fields describe; "" or what is wrong with them (a trace's rank, no input).
  ImportRequest request(QString* error) const;
  /// Starts the import of what the fields say (the Import button).
  void startImport();
  bool isImporting() const { return watcher_->isRunning(); }
  /// The last import's outcome.
  const ImportOutcome& outcome() const { return outcome_; }
  /// What the dialog shows under the fields: progress, counts and notes, or the error.
  QString bannerText() const;

 signals:
  /// A session was written into `file`: the Sessions page reloads and selects `uid`.
  void imported(const QString& file, const QString& uid);
  void importFinished(bool ok);

 protected:
  void reject() override;

 private:
  void addSourceRows(QFormLayout* form);
  QWidget* buildLogs();
  QWidget* buildTraces();
  void addLabelRows(QFormLayout* form);
  void addLogs();
  void addTraces();
  void onProgress(const sessions::ImportProgress& progress);
  void onFinished();
  void updateCliTwin();
  void setBusy(bool busy);
  void growToFit();

  QLineEdit* session_file_ = nullptr;
  QLineEdit* csv_dir_ = nullptr;
  QLineEdit* tensorboard_dir_ = nullptr;
  QLineEdit* config_file_ = nullptr;
  QListWidget* logs_ = nullptr;
  QTableWidget* traces_ = nullptr;
  QLineEdit* name_ = nullptr;
  QLineEdit* tags_ = nullptr;
  QSpinBox* samples_per_step_ = nullptr;
  QLabel* cli_twin_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* banner_ = nullptr;
  QPushButton* import_ = nullptr;
  QFutureWatcher<ImportOutcome>* watcher_ = nullptr;
  std::atomic<bool> cancel_{false};
  ImportOutcome outcome_;
};

}  // namespace shardscope::gui
