#pragma once
// The ranks' output in one console, filterable by rank, by level and by a search text, as a
// terminal multiplexer with grep would give: each line keeps its rank (from the launcher's
// `[rank R] ` or `[host:R] ` prefix) and a level read from its text. Holds at most kMaxLines (oldest dropped).

#include <deque>
#include <map>

#include <QAbstractListModel>
#include <QSortFilterProxyModel>
#include <QWidget>

#include "app/gui/launch/launch_spec.hpp"

class QComboBox;
class QLineEdit;
class QListView;

namespace shardscope::gui {

class RankLogModel : public QAbstractListModel {
  Q_OBJECT

 public:
  static constexpr int kRankRole = Qt::UserRole;
  static constexpr int kLevelRole = Qt::UserRole + 1;
  static constexpr int kSummaryRole = Qt::UserRole + 2;  ///< the launcher's closing summary (ConsoleLine::summary)
  static constexpr std::size_t kMaxLines = 200000;

  explicit RankLogModel(QObject* parent = nullptr);
  void append(const ConsoleLine& line);
  void clear();
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

 private:
  std::deque<ConsoleLine> lines_;
};

class RankLogFilter : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit RankLogFilter(QObject* parent = nullptr);
  /// std::nullopt: every rank; -1: the launcher's own lines.
  void setRank(std::optional<int> rank);
  void setMinLevel(LineLevel level);
  void setSearch(const QString& text);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  std::optional<int> rank_;
  LineLevel min_level_ = LineLevel::kDebug;
  QString search_;
};

class RankConsole : public QWidget {
  Q_OBJECT

 public:
  explicit RankConsole(QWidget* parent = nullptr);
  void append(const ConsoleLine& line);
  void clear();
  /// Offers ranks 0..world_size-1 in the rank filter.
  void setWorldSize(int world_size);
  /// The same, each rank labelled `host:R` where `hosts` names its host (a run across hosts).
  void setRanks(int world_size, const std::map<int, std::string>& hosts);
  /// Every rank, every level, no search text: what a new run starts with.
  void resetFilters();
  RankLogModel* model() const { return model_; }
  RankLogFilter* filter() const { return filter_; }
  QLineEdit* searchField() const { return search_; }
  QComboBox* rankBox() const { return rank_; }
  QComboBox* levelBox() const { return level_; }

 private:
  RankLogModel* model_ = nullptr;
  RankLogFilter* filter_ = nullptr;
  QListView* view_ = nullptr;
  QComboBox* rank_ = nullptr;
  QComboBox* level_ = nullptr;
  QLineEdit* search_ = nullptr;
};

/// "debug", "info", "warning", "error".
const char* line_level_name(LineLevel level);

}  // namespace shardscope::gui
