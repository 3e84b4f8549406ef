#pragma once
// The profile view of one session: the timeline of its profiled window, the top kernels per rank,
// the collectives, and the profiler's analyses (phases per step, communication hidden vs exposed,
// GPU idle, stragglers), each table exportable as CSV and the timeline as PNG.

#include <memory>

#include <QFutureWatcher>
#include <QWidget>

#include "app/gui/profile_data.hpp"

class QLabel;
class QPlainTextEdit;
class QTabWidget;
class QTableView;

namespace shardscope::gui {

class ProfileTimeline;
class RowsTableModel;

class ProfileView : public QWidget {
  Q_OBJECT

 public:
  explicit ProfileView(QWidget* parent = nullptr);
  ~ProfileView() override;

  /// Loads `session`'s profiled window on a worker thread; profileLoaded() follows.
  void load(const SessionRef& session);
  /// Shows already loaded data.
  void show(std::shared_ptr<const ProfileData> data);
  std::shared_ptr<const ProfileData> data() const { return data_; }
  ProfileTimeline* timeline() const { return timeline_; }
  RowsTableModel* kernelsModel() const { return kernels_; }
  RowsTableModel* collectivesModel() const { return collectives_; }
  RowsTableModel* overlapModel() const { return overlap_; }
  QString analysesText() const;

 signals:
  void profileLoaded();
  void statusMessage(const QString& message);

 private:
  QWidget* buildTimelineTab();
  QTableView* addTableTab(RowsTableModel* model, const QString& title, const QString& export_name);
  void fillTables();

  QTabWidget* tabs_ = nullptr;
  QLabel* header_ = nullptr;
  ProfileTimeline* timeline_ = nullptr;
  RowsTableModel* kernels_ = nullptr;
  RowsTableModel* collectives_ = nullptr;
  RowsTableModel* overlap_ = nullptr;
  QPlainTextEdit* analyses_ = nullptr;
  QFutureWatcher<std::shared_ptr<const ProfileData>>* watcher_ = nullptr;
  std::shared_ptr<const ProfileData> data_;
};

}  // namespace shardscope::gui
