#pragma once
// The profile view of one session, a tool to work in: the timeline on top, the analyses below as
// native tables and charts (time per phase as a stacked bar per rank, communication hidden vs
// exposed, top kernels, collectives, GPU idle, stragglers, and the CLI's text). One selection
// drives every pane, as in Hotspot and Nsight Systems: a time range (Shift+drag), a step, a kernel
// or a collective (clicked on the timeline or in a table) re-runs the analyses on what it covers,
// and the header shows the same selection as a `shardscope sessions show --profile --select-...`
// command.

#include <memory>

#include <QFutureWatcher>
#include <QWidget>

#include "app/gui/profile/profile_data.hpp"

class QCustomPlot;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTabWidget;
class QTableView;

namespace shardscope::gui {

class ProfileTimeline;
class RowsTableModel;

/// The analyses of one selection, computed off the GUI thread.
struct SelectionAnalyses {
  profiler::ProfileSelection selection;
  profiler::ProfileAnalyses analyses;
  std::vector<sessions::CommOpStat> collectives;
};

class ProfileView : public QWidget {
  Q_OBJECT

 public:
  /// The widest a table column gets (px): longer kernel names elide in the middle.
  static constexpr int kNameColumnMaxWidth = 420;

  explicit ProfileView(QWidget* parent = nullptr);
  ~ProfileView() override;

  /// Loads `session`'s records on a worker thread; profileLoaded() follows.
  void load(const SessionRef& session);
  /// Shows already loaded data (the selection is cleared).
  void show(std::shared_ptr<const ProfileData> data);
  /// Narrows every pane to `selection` (an empty one shows everything); selectionAnalysed() follows.
  void setSelection(const profiler::ProfileSelection& selection);
  const profiler::ProfileSelection& selection() const { return selection_; }
  std::shared_ptr<const ProfileData> data() const { return data_; }
  /// The analyses the panes show now (of the selection).
  const SelectionAnalyses& shown() const { return shown_; }
  ProfileTimeline* timeline() const { return timeline_; }
  /// The timeline's rank filter (sessions::parse_rank_selection: "0-7,12", "node3"; empty: every
  /// rank) and the line under it that says why a filter was refused.
  QLineEdit* rankFilter() const { return rank_filter_; }
  QLabel* rankFilterError() const { return rank_error_; }
  /// Shows lanes for the ranks `text` names; false (the lanes kept, the reason shown) when it is bad.
  bool setRankFilter(const QString& text);
  RowsTableModel* kernelsModel() const { return kernels_; }
  QTableView* kernelsView() const { return kernels_view_; }
  RowsTableModel* collectivesModel() const { return collectives_; }
  RowsTableModel* overlapModel() const { return overlap_; }
  RowsTableModel* phasesModel() const { return phases_; }
  RowsTableModel* idleModel() const { return idle_; }
  RowsTableModel* stragglersModel() const { return stragglers_; }
  QCustomPlot* phaseChart() const { return phase_chart_; }
  QCustomPlot* overlapChart() const { return overlap_chart_; }
  QTabWidget* panes() const { return panes_; }
  /// The analyses as `shardscope sessions show --profile` prints them.
  QString analysesText() const;
  /// The command that prints the same selection's analyses.
  QString cliCommand() const;

 signals:
  void profileLoaded();
  void selectionAnalysed();
  void statusMessage(const QString& message);

 private:
  QWidget* buildTimeline();
  QWidget* buildRankFilter();
  QWidget* buildPanes();
  QTableView* addTable(RowsTableModel* model, const QString& export_name);
  QWidget* chartAndTable(QCustomPlot* chart, RowsTableModel* model, const QString& export_name);
  void connectSelection();
  void select(const std::function<void(profiler::ProfileSelection&)>& change);
  void showAnalyses(const SelectionAnalyses& shown);
  void showHeader();

  QLabel* header_ = nullptr;
  QLabel* selection_label_ = nullptr;
  ProfileTimeline* timeline_ = nullptr;
  QLineEdit* rank_filter_ = nullptr;
  QLabel* rank_error_ = nullptr;
  QTabWidget* panes_ = nullptr;
  RowsTableModel *kernels_ = nullptr, *collectives_ = nullptr, *overlap_ = nullptr, *phases_ = nullptr,
                 *idle_ = nullptr, *stragglers_ = nullptr;
  QTableView *kernels_view_ = nullptr, *collectives_view_ = nullptr, *stragglers_view_ = nullptr;
  QCustomPlot* phase_chart_ = nullptr;
  QCustomPlot* overlap_chart_ = nullptr;
  QPlainTextEdit* analyses_ = nullptr;
  QFutureWatcher<std::shared_ptr<const ProfileData>>* watcher_ = nullptr;
  QFutureWatcher<SelectionAnalyses>* analysis_watcher_ = nullptr;
  std::shared_ptr<const ProfileData> data_;
  profiler::ProfileSelection selection_;
  SelectionAnalyses shown_;
  bool reanalyse_ = false;  ///< the selection changed while an analysis ran
};

}  // namespace shardscope::gui
