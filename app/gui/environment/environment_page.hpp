#pragma once
// The Environment page: the same report as `shardscope report`, obtained by running
// `shardscope report --json` as a child process (asynchronously, so the window never freezes).

#include <QWidget>

#include "sessions/environment_report.hpp"

class QLabel;
class QProcess;
class QPushButton;
class QTreeWidget;

namespace shardscope::gui {

class EnvironmentPage : public QWidget {
  Q_OBJECT

 public:
  /// The widest the Item and Value columns get (px): the Notes column (a check's fix) starts on screen.
  static constexpr int kValueColumnMaxWidth = 420;

  explicit EnvironmentPage(QWidget* parent = nullptr);
  ~EnvironmentPage() override;

  /// Starts `shardscope report --json`; reportLoaded or reportFailed follows.
  void refresh();
  /// Ends a report still loading, without signals (the window is closing): the child is killed
  /// and reaped here, so its end can never reach a half-destroyed page.
  void stop();
  bool isLoading() const;
  /// The running child's pid (0 when none), for tests.
  qint64 processId() const;
  /// The report in the CLI's text form (with this GUI's Qt version), for the clipboard.
  QString reportText() const;
  bool hasReport() const { return has_report_; }
  QTreeWidget* tree() const { return tree_; }

 signals:
  void reportLoaded();
  void reportFailed(const QString& message);
  void statusMessage(const QString& message);

 private:
  void onFinished(int exit_code);
  void showReport(const sessions::EnvironmentReport& report);
  void showError(const QString& message);

  QTreeWidget* tree_ = nullptr;
  QLabel* summary_ = nullptr;
  QPushButton* refresh_button_ = nullptr;
  QPushButton* copy_button_ = nullptr;
  QProcess* process_ = nullptr;
  sessions::EnvironmentReport report_;
  bool has_report_ = false;
};

}  // namespace shardscope::gui
