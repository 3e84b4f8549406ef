#pragma once
// The Sessions & Compare page: open session files (dialog, drag and drop, recent files), filter
// the sessions of all of them, rename, tag or delete them (right-click), select 2 to 8 to compare
// (curves overlaid with smoothing and log scale, summary deltas against the first, run, config
// and environment diffs, step-time breakdown, each metric's regression verdict with its interval,
// what moved and what changed, a metric's trend over the file's sessions) or one to see it alone,
// and one to profile; Import... opens File > Import. Every query runs on a worker thread (the
// curves: sessions_page_curves.cpp; verdicts and trends: sessions_page_verdicts.cpp).
// CLI twins: `shardscope sessions list|compare|show --profile|rename|tag|delete|import|check|trend --db FILE`.

#include <memory>

#include <QFutureWatcher>
#include <QWidget>

#include "app/gui/sessions/compare_data.hpp"
#include "app/gui/sessions/verdict_data.hpp"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QMenu;
class QSpinBox;
class QTabWidget;
class QTableView;

namespace shardscope::diagnosis {
struct FindingRow;
}

namespace shardscope::gui {

class DiffTableModel;
class ProfileView;
class RankHeatMap;
class SessionCatalogModel;
class SessionFilterProxy;
class SummaryDeltaModel;
class TextTableModel;

class SessionsPage : public QWidget {
  Q_OBJECT

 public:
  /// The widest a column of the Run, Config and Environment diffs gets (px); longer values elide.
  static constexpr int kDiffColumnMaxWidth = 480;

  explicit SessionsPage(QWidget* parent = nullptr);
  ~SessionsPage() override;

  /// Adds session files (remembered as recent) and reloads the list.
  void openFiles(const QStringList& paths);
  /// The open files, in order.
  QStringList files() const { return files_; }
  /// Re-reads every open file's sessions (a running session's steps and status change).
  void refresh();
  /// Compares these sessions (1 to 8, the first is the baseline; one is shown alone).
  void compare(const std::vector<SessionRef>& sessions);
  /// Compares the sessions selected in the list, in list order.
  void compareSelected();
  /// Shows the profiled window of the selected session (or of `session`).
  void profileSelected();
  void profile(const SessionRef& session);
  /// Opens `file` if needed and selects session `uid` in the list once it is loaded.
  void revealSession(const QString& file, const QString& uid);
  /// Selects rows of the filtered list whose session name is in `names`.
  void selectByName(const QStringList& names);
  /// Renames, tags or deletes sessions (the sessions library on their files), then reloads the list;
  /// returns "" or the error, and reports the CLI twin in the status bar.
  QString renameSession(const SessionRef& session, const QString& name);
  QString tagSession(const SessionRef& session, const QStringList& add, const QStringList& remove);
  QString deleteSessions(const std::vector<SessionRef>& sessions);
  /// Writes the sessions' tables (steps, timers, series, logs...) as CSV into `directory`, as
  /// `shardscope sessions export ... --csv DIR` does; returns "" or the error (sessions of one file).
  QString exportSessions(const std::vector<SessionRef>& sessions, const QString& directory);

  SessionCatalogModel* catalogModel() const { return catalog_; }
  SessionFilterProxy* filterProxy() const { return proxy_; }
  QLineEdit* filterField() const { return filter_; }
  SummaryDeltaModel* summaryModel() const { return summary_model_; }
  DiffTableModel* configDiffModel() const { return config_model_; }
  DiffTableModel* environmentDiffModel() const { return environment_model_; }
  DiffTableModel* runDiffModel() const { return run_model_; }
  RankHeatMap* heatMap() const { return heat_map_; }
  ProfileView* profileView() const { return profile_view_; }
  const Comparison& comparison() const { return comparison_; }
  const std::vector<PlotCurve>& plotCurves() const { return plot_curves_; }
  /// The chart of a metric ("loss", "step_time_ms", ...), or null.
  QCustomPlot* chart(const std::string& metric) const;
  void setSmoothing(const sessions::Smoothing& smoothing);
  void setLogScale(bool on);
  /// Shows a tab by title ("Curves", "Summary", "Verdict", "Trend", "Run", "Config diff", "Environment",
  /// "Breakdown", "Profile").
  void showTab(const QString& title);

  /// The Findings tab (sessions_page_findings.cpp): every compared session's run-doctor findings.
  TextTableModel* findingsModel() const { return findings_model_; }
  /// Shows finding `row` where it happened: the Curves tab, zoomed to its steps.
  void openFinding(int row);

  /// The Verdict tab (sessions_page_verdicts.cpp): `sessions check` on the compared sessions.
  /// The ways to split them (verdict_group_choices) and the one chosen; choosing re-runs the check.
  const std::vector<VerdictGroups>& verdictChoices() const { return verdict_choices_; }
  void setVerdictGroups(int choice);
  /// --fail-on thresholds ("" = the documented defaults); re-runs the check.
  void setFailOn(const QString& text);
  /// Runs the check on the chosen split; verdictReady() follows.
  void runVerdict();
  const VerdictView& verdict() const { return verdict_; }
  TextTableModel* verdictModel() const { return verdict_model_; }
  TextTableModel* contributorsModel() const { return contributors_model_; }
  TextTableModel* changesModel() const { return changes_model_; }
  QCustomPlot* verdictChart() const { return verdict_chart_; }
  QLabel* verdictHeadline() const { return verdict_headline_; }
  /// Opens the profile of the candidate (or the baseline) narrowed to contributor `row`: a kernel
  /// family's longest kernel, a collective, or the Phases pane for a phase (as a double-click does).
  void openContributor(int row, bool baseline = false);
  /// The Trend tab: `sessions trend METRIC --by GROUPING [--tag TAG]` over the baseline's file (or
  /// the first open file); trendReady() follows.
  void showTrend(const QString& metric, sessions::TrendGrouping grouping, const QString& tag = {});
  const TrendView& trend() const { return trend_; }
  TextTableModel* trendModel() const { return trend_model_; }
  QCustomPlot* trendChart() const { return trend_chart_; }

 signals:
  void catalogLoaded();
  void comparisonReady();
  void verdictReady();
  void trendReady();
  void curvesDrawn();
  void statusMessage(const QString& message);
  /// The toolbar's Import... was clicked: the window opens File > Import's dialog.
  void importRequested();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  QWidget* buildToolbar();
  QWidget* buildList();
  QWidget* buildCurvesTab();
  QWidget* buildCurveOptions();
  QWidget* buildDiffTab(DiffTableModel* model, const QString& name);
  QWidget* buildSummaryTab();
  QWidget* buildVerdictTab();
  QWidget* buildVerdictControls();
  QWidget* buildVerdictTables();
  QWidget* buildTrendTab();
  QWidget* buildFindingsTab();
  void showFindings();
  void showFindingsNote(int errors, const std::vector<diagnosis::FindingRow>& rows, std::size_t sessions);
  void readFindings();
  void onFindingsRead();
  // sessions_page_ranks.cpp: many-rank sessions.
  void drawBands(const PlotCurve& curve, QCustomPlot* plot);
  QWidget* buildHeatMapTab();
  void showHeatMap();
  QWidget* buildTrendControls();
  void updateVerdictChoices();
  void onVerdictReady();
  void clearVerdict(const QString& why);
  void markTrendStale();
  void showContributorMenu(const QPoint& pos);
  void runTrend();
  void onTrendReady();
  QString trendFile() const;
  void chooseFiles();
  void showListMenu(const QPoint& pos);
  void askRename(const SessionRef& session);
  void askTags(const SessionRef& session);
  void askDelete(const std::vector<SessionRef>& sessions);
  void askExport(const std::vector<SessionRef>& sessions);
  QString uidOf(const SessionRef& session) const;
  void updateRecentMenu();
  void onCatalogLoaded();
  void onComparisonReady();
  void replot();
  void drawCurves();
  sessions::Smoothing smoothing() const;
  void saveSettings() const;
  std::vector<SessionRef> selectedRefs() const;

  QStringList files_;
  SessionCatalogModel* catalog_ = nullptr;
  SessionFilterProxy* proxy_ = nullptr;
  QTableView* list_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QComboBox* status_filter_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QLabel* compare_header_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  TextTableModel* findings_model_ = nullptr;
  QLabel* findings_note_ = nullptr;
  std::vector<sessions::Finding> finding_rows_;  ///< the Findings table's rows, in order
  std::vector<std::pair<std::string, QCustomPlot*>> charts_;
  QCustomPlot* breakdown_chart_ = nullptr;
  QComboBox* smoothing_kind_ = nullptr;
  QDoubleSpinBox* smoothing_weight_ = nullptr;
  QSpinBox* smoothing_window_ = nullptr;
  QCheckBox* log_scale_ = nullptr;
  QCheckBox* show_raw_ = nullptr;
  QSpinBox* warmup_ = nullptr;
  SummaryDeltaModel* summary_model_ = nullptr;
  DiffTableModel* config_model_ = nullptr;
  DiffTableModel* environment_model_ = nullptr;
  DiffTableModel* run_model_ = nullptr;
  ProfileView* profile_view_ = nullptr;
  RankHeatMap* heat_map_ = nullptr;
  QLabel* heat_map_label_ = nullptr;
  bool heat_map_stale_ = true;  ///< the comparison changed since the heat map read its session
  QFutureWatcher<Catalog>* catalog_watcher_ = nullptr;
  QFutureWatcher<Comparison>* compare_watcher_ = nullptr;
  QFutureWatcher<Comparison>* findings_watcher_ = nullptr;  ///< the doctor's findings, read after the curves
  QFutureWatcher<std::vector<PlotCurve>>* plot_watcher_ = nullptr;
  bool replot_pending_ = false;
  QString reveal_uid_;
  Comparison comparison_;
  std::vector<PlotCurve> plot_curves_;

  // The Verdict tab.
  QComboBox* verdict_groups_ = nullptr;
  QLineEdit* fail_on_ = nullptr;
  QLabel* verdict_headline_ = nullptr;
  QLabel* verdict_cli_ = nullptr;
  QLabel* verdict_notes_ = nullptr;
  TextTableModel* verdict_model_ = nullptr;
  TextTableModel* contributors_model_ = nullptr;
  TextTableModel* changes_model_ = nullptr;
  QTableView* contributors_view_ = nullptr;
  QLabel* contributors_note_ = nullptr;
  QCustomPlot* verdict_chart_ = nullptr;
  QFutureWatcher<VerdictView>* verdict_watcher_ = nullptr;
  std::vector<VerdictGroups> verdict_choices_;
  VerdictView verdict_;
  bool verdict_pending_ = false;  ///< the request changed while a check ran
  // The Trend tab.
  QComboBox* trend_metric_ = nullptr;
  QComboBox* trend_by_ = nullptr;
  QLineEdit* trend_tag_ = nullptr;
  QLabel* trend_cli_ = nullptr;
  QLabel* trend_notes_ = nullptr;
  QCustomPlot* trend_chart_ = nullptr;
  TextTableModel* trend_model_ = nullptr;
  QFutureWatcher<TrendView>* trend_watcher_ = nullptr;
  TrendView trend_;
  bool trend_stale_ = true;    ///< the files or the comparison changed since the trend was read
  bool trend_pending_ = false;
};

}  // namespace shardscope::gui
