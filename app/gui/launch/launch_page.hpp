#pragma once
// The Launch & Watch page: choose a config (the Config Editor's document or a file) and --set
// overrides, a model (built-in shape, Hugging Face config.json, optional safetensors weights),
// data (synthetic or a token file), where to run (N CPU processes or N GPUs on this machine, the
// rendezvous), steps and the session file, checkpoints to save and load, a profiled window and any
// extra train arguments; Start runs `shardscope launch ... -- <train args>` (shown as its CLI
// twin) and Stop ends it. While it runs: live curves per rank with a rank legend, the step-time
// breakdown, progress with ETA, and the ranks' logs; a failed run names the failing rank and why.
// The form is a column of sections (launch_page_form.cpp); "these hosts" (a hostfile, node
// selection, the preflight: launch_page_hosts.cpp) runs across the hosts of a hostfile and labels
// curves and log lines `host:rank`; "your own command" (launch_page_command.cpp) runs a user's
// DeepSpeed or torchrun command under `shardscope watch` and follows its session the same way.

#include <functional>

#include <QElapsedTimer>
#include <QWidget>

#include "app/gui/launch/launch_spec.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace shardscope::gui {

class HostfileEditor;
class LaunchRunner;
class LivePlots;
class PreflightPanel;
class RankHeatMap;
class RankConsole;
class SessionPoller;
struct LiveUpdate;
struct DoctorAlarm;

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
  /// "Your own command": the command and where its session goes; throws std::invalid_argument.
  WatchSpec watchSpec() const;
  void setWatchSpec(const WatchSpec& spec);
  /// ShardScope's engine (false) or the user's own command under `shardscope watch` (true).
  void setOwnCommand(bool own);
  bool ownCommand() const;
  /// Where the ranks run: 0/1 this machine (CPU/GPUs), 2/3 the hosts of a hostfile (CPU/GPUs).
  void setWhere(int index);
  /// Whether the config comes from the Config Editor.
  void setUseEditorConfig(bool use);
  bool isRunning() const;
  /// Stops a running launch and waits for it (for the window closing).
  void shutdown();
  /// "2 CPU rank(s), step 40 of 120, into runs.db": what closing the window would stop.
  QString runDescription() const;

  LaunchRunner* runner() const { return runner_; }
  LivePlots* plots() const { return plots_; }
  RankConsole* console() const { return console_; }
  QProgressBar* progress() const { return progress_; }
  QLabel* banner() const { return banner_; }
  /// The banner's HTML while it shows the run doctor's alarm (the first error finding), else "".
  QString doctorBanner() const { return doctor_html_; }
  QLabel* rankLegend() const { return rank_legend_; }
  QLabel* cliTwin() const { return cli_twin_; }
  QString sessionUid() const { return session_uid_; }
  HostfileEditor* hostfileEditor() const { return hostfile_; }
  PreflightPanel* preflight() const { return preflight_; }
  RankHeatMap* heatMap() const { return heat_map_; }

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
  // launch_page_form.cpp: the form's sections, and the spec they hold.
  QWidget* buildForm();
  QWidget* buildConfigGroup();
  QWidget* buildModelGroup();
  QWidget* buildWhereGroup();
  QWidget* buildRunGroup();
  QWidget* buildCheckpointGroup();
  QWidget* buildProfileGroup();
  QWidget* buildButtons();
  // launch_page_hosts.cpp: "these hosts".
  QWidget* buildHostsGroup();
  void fillHostsSpec(LaunchSpec& spec) const;
  void showWhere();
  // launch_page_command.cpp: "your own command".
  QWidget* buildModeGroup();
  QWidget* buildCommandGroup();
  void showMode();
  void startWatch();
  QLineEdit* pathField(const QString& tooltip, const QString& filter, bool save, QWidget** row);
  void saveSettings() const;
  void restoreSettings();
  // launch_page.cpp: the watch side.
  QWidget* buildWatch();
  void updateCliTwin();
  void showRankLegend(int world_size);
  /// The heat map follows the run's session: read again at most every few seconds while shown.
  void refreshHeatMap(std::int64_t session_id);
  void onRankHosts();
  // launch_page_run.cpp: the run.
  QString configPathForRun();
  /// Clears the watch side for a new run of `world_size` ranks (0: not known yet) and `steps` (0: unknown).
  void resetWatchSide(int world_size, int steps);
  /// Starts `args` through the CLI locator; false (with the banner saying why) when it cannot.
  bool startCli(const std::vector<std::string>& args, int world_size, const QString& working_dir = {},
                const std::vector<std::string>& environment = {});
  void onUpdate(const LiveUpdate& update);
  void onFinished(int exit_code, bool stopped);
  void showBanner(const QString& html, bool error);
  // launch_page_doctor.cpp: the run doctor's banner and its links.
  void showDoctorAlarm(const DoctorAlarm& alarm);
  void onBannerLink(const QString& link);
  void focusRank(int rank, std::int64_t step);

  std::function<QString()> editor_text_, editor_path_;
  QComboBox* config_source_ = nullptr;
  QLineEdit* config_file_ = nullptr;
  QPlainTextEdit* overrides_ = nullptr;
  QComboBox* model_ = nullptr;
  QSpinBox *layers_ = nullptr, *hidden_ = nullptr, *heads_ = nullptr, *kv_heads_ = nullptr, *seq_len_ = nullptr,
           *vocab_ = nullptr;
  QCheckBox* activation_checkpointing_ = nullptr;
  QLineEdit* hf_config_ = nullptr;
  QLineEdit* weights_ = nullptr;
  QLineEdit* data_ = nullptr;
  QComboBox* where_ = nullptr;
  QSpinBox* processes_ = nullptr;
  QLineEdit* include_ = nullptr;
  QLineEdit* master_addr_ = nullptr;
  QSpinBox* master_port_ = nullptr;
  QLineEdit* rank_logs_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QLineEdit* session_file_ = nullptr;
  QLineEdit* name_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* hang_after_ = nullptr;
  QCheckBox* stop_on_hang_ = nullptr;
  QLineEdit* save_dir_ = nullptr;
  QSpinBox* save_every_ = nullptr;
  QLineEdit* load_dir_ = nullptr;
  QSpinBox* profile_start_ = nullptr;
  QSpinBox* profile_count_ = nullptr;
  QLineEdit* extra_args_ = nullptr;
  // These hosts.
  QWidget* hosts_group_ = nullptr;
  HostfileEditor* hostfile_ = nullptr;
  QSpinBox* num_nodes_ = nullptr;
  QLineEdit* exclude_ = nullptr;
  QComboBox* node_launcher_ = nullptr;
  QSpinBox* ssh_port_ = nullptr;
  QLineEdit* launcher_args_ = nullptr;
  PreflightPanel* preflight_ = nullptr;
  // Your own command.
  QComboBox* mode_ = nullptr;
  QWidget* command_group_ = nullptr;
  QList<QWidget*> engine_groups_;
  QLineEdit* command_ = nullptr;
  QLineEdit* command_dir_ = nullptr;
  QPlainTextEdit* command_env_ = nullptr;
  QLineEdit* watch_session_ = nullptr;
  QLineEdit* watch_name_ = nullptr;
  bool watching_ = false;  ///< the run going (or last ended) is `shardscope watch`
  QLabel* cli_twin_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPushButton* open_session_ = nullptr;
  QPushButton* follow_ = nullptr;
  QSpinBox* window_ = nullptr;
  QLabel* banner_ = nullptr;
  QLabel* rank_legend_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* eta_ = nullptr;
  LivePlots* plots_ = nullptr;
  RankConsole* console_ = nullptr;
  RankHeatMap* heat_map_ = nullptr;
  QTabWidget* watch_tabs_ = nullptr;
  QElapsedTimer heat_map_clock_;  ///< since the heat map's last read
  std::int64_t heat_map_session_ = 0;
  LaunchRunner* runner_ = nullptr;
  SessionPoller* poller_ = nullptr;
  LaunchSpec running_;
  QString session_uid_;
  QString doctor_html_;  ///< the run doctor's alarm, kept when the run ends
  QString end_note_;     ///< how the run ended, shown under the alarm
  QElapsedTimer clock_;
};

}  // namespace shardscope::gui
