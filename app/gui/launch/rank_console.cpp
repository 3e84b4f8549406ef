#include "app/gui/launch/rank_console.hpp"

#include <QBrush>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QScrollBar>
#include <QVBoxLayout>

namespace shardscope::gui {

const char* line_level_name(LineLevel level) {
  switch (level) {
    case LineLevel::kDebug: return "debug";
    case LineLevel::kInfo: return "info";
    case LineLevel::kWarning: return "warning";
    case LineLevel::kError: return "error";
  }
  return "info";
}

RankLogModel::RankLogModel(QObject* parent) : QAbstractListModel(parent) {}

void RankLogModel::append(const ConsoleLine& line) {
  if (lines_.size() >= kMaxLines) {
    beginRemoveRows({}, 0, 0);
    lines_.pop_front();
    endRemoveRows();
  }
  const int row = static_cast<int>(lines_.size());
  beginInsertRows({}, row, row);
  lines_.push_back(line);
  endInsertRows();
}

void RankLogModel::clear() {
  beginResetModel();
  lines_.clear();
  endResetModel();
}

int RankLogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(lines_.size());
}

QVariant RankLogModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const ConsoleLine& line = lines_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return "[" + QString::fromStdString(rank_label(line.rank, line.host)) + "] " + QString::fromStdString(line.text);
    case kRankRole: return line.rank;
    case kLevelRole: return static_cast<int>(line.level);
    case kSummaryRole: return line.summary;
    case Qt::ForegroundRole:
      if (line.level == LineLevel::kError) return QBrush(QColor(200, 30, 30));
      if (line.level == LineLevel::kWarning) return QBrush(QColor(170, 110, 0));
      if (line.level == LineLevel::kDebug) return QBrush(Qt::gray);
      return {};
    default: return {};
  }
}

RankLogFilter::RankLogFilter(QObject* parent) : QSortFilterProxyModel(parent) {}

void RankLogFilter::setRank(std::optional<int> rank) {
  rank_ = rank;
  invalidateFilter();
}

void RankLogFilter::setMinLevel(LineLevel level) {
  min_level_ = level;
  invalidateFilter();
}

void RankLogFilter::setSearch(const QString& text) {
  search_ = text;
  invalidateFilter();
}

bool RankLogFilter::filterAcceptsRow(int source_row, const QModelIndex&) const {
  const QModelIndex index = sourceModel()->index(source_row, 0);
  if (rank_ && index.data(RankLogModel::kRankRole).toInt() != *rank_) return false;
  if (index.data(RankLogModel::kLevelRole).toInt() < static_cast<int>(min_level_)) return false;
  return search_.isEmpty() || index.data().toString().contains(search_, Qt::CaseInsensitive);
}

RankConsole::RankConsole(QWidget* parent) : QWidget(parent) {
  model_ = new RankLogModel(this);
  filter_ = new RankLogFilter(this);
  filter_->setSourceModel(model_);
  view_ = new QListView;
  view_->setModel(filter_);
  view_->setUniformItemSizes(true);  // 200k lines stay fast to lay out
  view_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  rank_ = new QComboBox;
  rank_->setToolTip(tr("Show the lines of one rank, or of the launcher"));
  rank_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "worker-12:15" across hosts, not "worker-1"
  setWorldSize(1);
  level_ = new QComboBox;
  for (auto level : {LineLevel::kDebug, LineLevel::kInfo, LineLevel::kWarning, LineLevel::kError})
    level_->addItem(tr("%1 and above").arg(line_level_name(level)), static_cast<int>(level));
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("Search the logs"));
  search_->setClearButtonEnabled(true);
  connect(rank_, &QComboBox::currentIndexChanged, this, [this] {
    const QVariant v = rank_->currentData();
    filter_->setRank(v.isValid() ? std::optional<int>(v.toInt()) : std::nullopt);
  });
  connect(level_, &QComboBox::currentIndexChanged, this,
          [this] { filter_->setMinLevel(static_cast<LineLevel>(level_->currentData().toInt())); });
  connect(search_, &QLineEdit::textChanged, filter_, &RankLogFilter::setSearch);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Logs")));
  bar->addWidget(rank_);
  bar->addWidget(level_);
  bar->addWidget(search_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(view_, 1);
}

void RankConsole::append(const ConsoleLine& line) {
  // Stay at the bottom while the user is there; leave the view alone when they scrolled up.
  QScrollBar* bar = view_->verticalScrollBar();
  const bool at_bottom = bar->value() >= bar->maximum() - 2;
  model_->append(line);
  if (at_bottom) view_->scrollToBottom();
}

void RankConsole::clear() { model_->clear(); }

void RankConsole::resetFilters() {
  rank_->setCurrentIndex(0);
  level_->setCurrentIndex(0);
  search_->clear();
}

void RankConsole::setWorldSize(int world_size) { setRanks(world_size, {}); }

void RankConsole::setRanks(int world_size, const std::map<int, std::string>& hosts) {
  const QVariant keep = rank_->currentData();
  QSignalBlocker block(rank_);
  rank_->clear();
  rank_->addItem(tr("all ranks"));
  rank_->addItem(tr("launcher"), -1);
  for (int r = 0; r < world_size; ++r) {
    const auto host = hosts.find(r);
    rank_->addItem(QString::fromStdString(rank_label(r, host == hosts.end() ? std::string() : host->second)), r);
  }
  rank_->setCurrentIndex(std::max(0, rank_->findData(keep)));
}

}  // namespace shardscope::gui
