#pragma once
// The Launch & Watch page: choose a config (the Config Editor's document or a file), a model
// (built-in shape, Hugging Face config.json, optional safetensors weights), data (synthetic or a
// token file), where to run (N CPU processes or N GPUs on this machine), steps and the session
// file; Start runs `shardscope launch ... -- <train args>` (shown as its CLI twin) and Stop ends
// it. While it runs: live curves per rank read from the session, the step-time breakdown,
// progress with ETA, and the ranks' logs; a failed run names the failing rank and why.

#include <functional>

#include <QElapsedTimer>
#include <QWidget>

#include "app/gui/launch_spec.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace shardscope::gui {

class LaunchRunner;
class LivePlots;
class RankConsole;
class SessionPoller;
struct LiveUpdate;

class LaunchPage : public QWidget {
  Q_OBJECT

 public:
  explicit LaunchPage(QWidget* parent = nullptr);
  ~LaunchPage() override;

  /// Where "the Config Editor's document" comes from (its text and, when saved, its path).
  void setEditorDocument(std::function<QString()> text, std::function<QString()> path);
  void setSpec(const LaunchSpec& spec);
  /// The run the fields describe; throws std::invalid_argument naming a bad field.
  LaunchSpec spec() const;
  /// Whether the config comes from the Config Editor.
  void setUseEditorConfig(bool use);
  bool isRunning() const;
  /// Stops a running launch and waits for it (for the window closing).
  void shutdown();

  LaunchRunner* runner() const { return runner_; }
  LivePlots* plots() const { return plots_; }
  RankConsole* console() const { return console_; }
  QProgressBar* progress() const { return progress_; }
  QLabel* banner() const { return banner_; }
  QString sessionUid() const { return session_uid_; }

 public slots:
  void start();
  void stop();

 signals:
  void runStarted();
  void runFinished(int exit_code);
  /// The user asked to see the finished session in Sessions & Compare.
  void openSession(const QString& file, const QString& uid);
  void statusMessage(const QString& message);

 private:
  QWidget* buildForm();
  QWidget* buildConfigGroup();
  QWidget* buildModelGroup();
  QWidget* buildRunGroup();
  QWidget* buildWatch();
  QLineEdit* pathField(const QString& tooltip, const QString& filter, bool save, QWidget** row);
  QString configPathForRun();
  void onUpdate(const LiveUpdate& update);
  void onFinished(int exit_code, bool stopped);
  void showBanner(const QString& html, bool error);
  void updateCliTwin();
  void saveSettings() const;
  void restoreSettings();

  std::function<QString()> editor_text_, editor_path_;
  QComboBox* config_source_ = nullptr;
  QLineEdit* config_file_ = nullptr;
  QComboBox* model_ = nullptr;
  QSpinBox *layers_ = nullptr, *hidden_ = nullptr, *heads_ = nullptr, *seq_len_ = nullptr, *vocab_ = nullptr;
  QLineEdit* hf_config_ = nullptr;
  QLineEdit* weights_ = nullptr;
  QLineEdit* data_ = nullptr;
  QComboBox* where_ = nullptr;
  QSpinBox* processes_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QLineEdit* session_file_ = nullptr;
  QLineEdit* name_ = nullptr;
  QLabel* cli_twin_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPushButton* open_session_ = nullptr;
  QPushButton* follow_ = nullptr;
  QSpinBox* window_ = nullptr;
  QLabel* banner_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* eta_ = nullptr;
  LivePlots* plots_ = nullptr;
  RankConsole* console_ = nullptr;
  LaunchRunner* runner_ = nullptr;
  SessionPoller* poller_ = nullptr;
  LaunchSpec running_;
  QString session_uid_;
  QElapsedTimer clock_;
};

}  // namespace shardscope::gui
