#pragma once
// The ranks' output in one console, filterable by rank, by level and by a search text, as a
// terminal multiplexer with grep would give: each line keeps its rank (from the launcher's
// `[rank R] ` or `[host:R] ` prefix) and a level read from its text. The rank filter takes the
// Sessions page's syntax (sessions::parse_rank_selection: `0-7,12`, `node3`) plus `launcher` for
// the launcher's own lines; a filter it refuses is named under it and the lines stay as they were. Holds at most kMaxLines (oldest dropped).

#include <deque>
#include <map>
#include <set>

#include <QAbstractListModel>
#include <QSortFilterProxyModel>
#include <QWidget>

#include "app/gui/launch/launch_spec.hpp"
#include "sessions/events.hpp"

class QComboBox;
class QLabel;
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
  /// std::nullopt: every line; else the lines of these ranks (-1: the launcher's own lines).
  void setRanks(std::optional<std::set<int>> ranks);
  const std::optional<std::set<int>>& ranks() const { return ranks_; }
  void setMinLevel(LineLevel level);
  void setSearch(const QString& text);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  std::optional<std::set<int>> ranks_;
  LineLevel min_level_ = LineLevel::kDebug;
  QString search_;
};

class RankConsole : public QWidget {
  Q_OBJECT

 public:
  explicit RankConsole(QWidget* parent = nullptr);
  void append(const ConsoleLine& line);
  void clear();
  /// The rank filter resolves against ranks 0..world_size-1.
  void setWorldSize(int world_size);
  /// The same, with each rank's host where `hosts` names it (a run across hosts: `node3` works).
  void setRanks(int world_size, const std::map<int, std::string>& hosts);
  /// Every rank, every level, no search text: what a new run starts with.
  void resetFilters();
  RankLogModel* model() const { return model_; }
  RankLogFilter* filter() const { return filter_; }
  QLineEdit* searchField() const { return search_; }
  /// The rank filter ("" every line; "0-3,7", "node3", "launcher") and the line naming a bad one.
  QLineEdit* rankField() const { return rank_; }
  QLabel* rankError() const { return rank_error_; }
  /// Filters to the ranks `text` names; false (the filter kept, the reason shown) when it is bad.
  bool setRankFilter(const QString& text);
  QComboBox* levelBox() const { return level_; }

 private:
  bool applyRankFilter(const QString& text, bool show_error);

  RankLogModel* model_ = nullptr;
  RankLogFilter* filter_ = nullptr;
  QListView* view_ = nullptr;
  QLineEdit* rank_ = nullptr;
  QLabel* rank_error_ = nullptr;
  std::vector<sessions::RankInfo> ranks_;  ///< what the filter resolves against: ranks and hosts
  QComboBox* level_ = nullptr;
  QLineEdit* search_ = nullptr;
};

/// "debug", "info", "warning", "error".
const char* line_level_name(LineLevel level);

}  // namespace shardscope::gui
