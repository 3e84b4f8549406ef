#pragma once
// The Tune page: `shardscope tune` in a window. The form (tune_page_form.cpp) sets the config,
// the space (--space KEY=V1,V2 rows, the default space shown beside them), the metric, tuner,
// trial limit, time budget and early stopping, the memory budget and margin, where trials run
// (CPU processes or GPUs per host, a hostfile), the session database and output folder, and the
// train arguments; the page shows its CLI twin. Start runs the tuner as a child process
// (tune_runner.hpp), Stop ends it and every process of its trials. While it runs the trials arrive
// from the session store the tuner writes (tune_poller.hpp) in a live table and a scatter of
// throughput against peak memory with the estimator's prediction beside each trial (tune_scatter.hpp);
// the best trial's config opens in the Config Editor, and two selected trials go to Compare.

#include <vector>

#include <QWidget>

#include "app/gui/tune/tune_results.hpp"
#include "app/gui/tune/tune_scatter.hpp"
#include "app/gui/tune/tune_spec.hpp"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace shardscope::gui {

class TunePoller;
class TuneRunner;
class TuneTrialsModel;

class TunePage : public QWidget {
  Q_OBJECT

 public:
  explicit TunePage(QWidget* parent = nullptr);
  ~TunePage() override;

  void setSpec(const TuneSpec& spec);
  /// The run the fields describe (paths made absolute).
  TuneSpec spec() const;
  bool isRunning() const;
  /// Stops a running tuner and waits for it (for the window closing).
  void shutdown();
  /// "tuning ds.json: trial 3 running, into tune.db": what closing the window would stop.
  QString runDescription() const;
  /// Shows run `uid` (empty: the newest) of session store `db`, as the runs box does.
  void showRun(const QString& db, const QString& uid = {});

  TuneRunner* runner() const { return runner_; }
  TuneTrialsModel* trialsModel() const { return model_; }
  QTableView* trialsView() const { return table_; }
  QCustomPlot* scatter() const { return scatter_; }
  const ScatterIndex& scatterIndex() const { return scatter_index_; }
  const TuneView& view() const { return view_; }
  QLabel* cliTwin() const { return cli_twin_; }
  QLabel* banner() const { return banner_; }
  QTableWidget* spacePreview() const { return space_preview_; }
  QPlainTextEdit* tunerOutput() const { return output_; }
  QPushButton* openBestButton() const { return open_best_; }
  QPushButton* compareButton() const { return compare_; }
  /// Selects these table rows (indices into the model), as a user's Ctrl+click does.
  void selectTrials(const QList<int>& rows);
  /// The config of the best trial: the run's ds_config.json once it has ended, else its candidate file.
  QString bestConfigPath() const;

 public slots:
  void start();
  void stop();
  /// Hands the best trial's config to the Config Editor (openConfig).
  void openBestConfig();
  /// Hands the two selected trials' sessions to Sessions & Compare (compareTrials).
  void compareSelected();

 signals:
  void runStarted();
  void runFinished(int exit_code);
  /// Open this DeepSpeed config in the Config Editor.
  void openConfig(const QString& path);
  /// Compare these sessions (the first is the baseline) in Sessions & Compare.
  void compareTrials(const std::vector<shardscope::gui::SessionRef>& sessions);
  void statusMessage(const QString& message);

 private:
  // tune_page_form.cpp: the form, the spec it holds, the space preview and the settings.
  QWidget* buildForm();
  QWidget* buildConfigGroup();
  QWidget* buildSearchGroup();
  QWidget* buildWhereGroup();
  QWidget* buildOutputGroup();
  QWidget* buildButtons();
  void fillDefaultSpace();
  void updateSpacePreview();
  void saveSettings() const;
  void restoreSettings();
  // tune_page.cpp: the results side and the run.
  QWidget* buildResults();
  QWidget* buildResultsToolbar();
  void updateCliTwin();
  void onProgress(const TuneProgress& progress);
  void onRunAnnounced(const QString& uid);
  void onFinished(int exit_code, bool stopped);
  void onScatterClick(QMouseEvent* event);
  void onScatterHover(QMouseEvent* event);
  void updateActions();
  void reloadRuns();
  void showBanner(const QString& text, bool error);

  QLineEdit* config_ = nullptr;
  QPlainTextEdit* space_ = nullptr;
  QTableWidget* space_preview_ = nullptr;
  QLabel* space_note_ = nullptr;
  QComboBox* metric_ = nullptr;
  QComboBox* tuner_ = nullptr;
  QSpinBox* trials_ = nullptr;
  QLineEdit* budget_ = nullptr;
  QSpinBox* early_stopping_ = nullptr;
  QCheckBox* try_dominated_ = nullptr;
  QLineEdit* profile_steps_ = nullptr;
  QLineEdit* memory_budget_ = nullptr;
  QDoubleSpinBox* memory_margin_ = nullptr;
  QComboBox* device_ = nullptr;
  QSpinBox* processes_ = nullptr;
  QLineEdit* hostfile_ = nullptr;
  QSpinBox* num_nodes_ = nullptr;
  QLineEdit* db_ = nullptr;
  QLineEdit* out_ = nullptr;
  QCheckBox* resume_ = nullptr;
  QLineEdit* train_args_ = nullptr;
  QLabel* cli_twin_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* stop_ = nullptr;
  QComboBox* runs_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* banner_ = nullptr;
  QPushButton* open_best_ = nullptr;
  QPushButton* compare_ = nullptr;
  QTableView* table_ = nullptr;
  QCustomPlot* scatter_ = nullptr;
  QPlainTextEdit* output_ = nullptr;
  TuneTrialsModel* model_ = nullptr;
  TuneRunner* runner_ = nullptr;
  TunePoller* poller_ = nullptr;
  TuneProgress last_progress_;
  TuneView view_;
  ScatterIndex scatter_index_;
  TuneSpec running_;     ///< the spec of the run shown (started here or chosen in the runs box)
  QString shown_db_;     ///< the session store of the run shown
  bool restoring_ = false;
};

}  // namespace shardscope::gui
