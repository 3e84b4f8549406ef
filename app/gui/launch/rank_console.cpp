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

#include "sessions/rank_selection.hpp"

namespace shardscope::gui {

namespace {

// The console's rank filter: parse_rank_selection's items, and `launcher` (or `launch`, as its lines
// are labelled) for the launcher's own lines.
std::optional<std::set<int>> console_ranks(const QString& text, const std::vector<sessions::RankInfo>& ranks) {
  const QString whole = text.trimmed();
  if (whole.isEmpty() || whole == "all") return std::nullopt;
  std::set<int> out;
  QStringList rest;
  for (const QString& item : whole.split(','))
    if (const QString word = item.trimmed().toLower(); word == "launcher" || word == "launch") out.insert(-1);
    else rest << item;
  if (!rest.isEmpty())
    for (const int r : sessions::parse_rank_selection(rest.join(',').toStdString(), ranks)) out.insert(r);
  return out;
}

}  // namespace

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

void RankLogFilter::setRanks(std::optional<std::set<int>> ranks) {
  ranks_ = std::move(ranks);
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
  if (ranks_ && !ranks_->count(index.data(RankLogModel::kRankRole).toInt())) return false;
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
  rank_ = new QLineEdit;
  rank_->setPlaceholderText(tr("all ranks (0-7,12, node3, launcher)"));
  rank_->setToolTip(tr("Show the lines of these ranks: ranks, ranges and host names separated by commas, as the "
                       "Sessions page's heat map takes them, and 'launcher' for the launcher's own lines"));
  rank_->setClearButtonEnabled(true);
  rank_->setMinimumWidth(rank_->fontMetrics().horizontalAdvance(rank_->placeholderText()) + 40);
  rank_error_ = new QLabel;
  rank_error_->setWordWrap(true);
  rank_error_->setStyleSheet("color: #c0392b");
  rank_error_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  rank_error_->hide();
  setWorldSize(1);
  level_ = new QComboBox;
  for (auto level : {LineLevel::kDebug, LineLevel::kInfo, LineLevel::kWarning, LineLevel::kError})
    level_->addItem(tr("%1 and above").arg(line_level_name(level)), static_cast<int>(level));
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("Search the logs"));
  search_->setClearButtonEnabled(true);
  // A filter that parses applies as it is typed; a bad one is named when the field is left (Enter),
  // not while "0-" is on its way to "0-7".
  connect(rank_, &QLineEdit::textEdited, this, [this](const QString& text) { applyRankFilter(text, false); });
  connect(rank_, &QLineEdit::editingFinished, this, [this] { applyRankFilter(rank_->text(), true); });
  connect(level_, &QComboBox::currentIndexChanged, this,
          [this] { filter_->setMinLevel(static_cast<LineLevel>(level_->currentData().toInt())); });
  connect(search_, &QLineEdit::textChanged, filter_, &RankLogFilter::setSearch);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Logs")));
  bar->addWidget(rank_, 1);
  bar->addWidget(level_);
  bar->addWidget(search_, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(rank_error_);
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

bool RankConsole::setRankFilter(const QString& text) {
  rank_->setText(text);
  return applyRankFilter(text, true);
}

bool RankConsole::applyRankFilter(const QString& text, bool show_error) {
  try {
    filter_->setRanks(console_ranks(text, ranks_));
    rank_error_->hide();
    return true;
  } catch (const std::exception& e) {
    rank_error_->setText(QString::fromStdString(e.what()) + tr(" (or 'launcher' for the launcher's lines)"));
    rank_error_->setVisible(show_error);
    return false;
  }
}

void RankConsole::resetFilters() {
  setRankFilter({});
  level_->setCurrentIndex(0);
  search_->clear();
}

void RankConsole::setWorldSize(int world_size) { setRanks(world_size, {}); }

void RankConsole::setRanks(int world_size, const std::map<int, std::string>& hosts) {
  ranks_.clear();
  for (int r = 0; r < world_size; ++r) {
    const auto host = hosts.find(r);
    ranks_.push_back({r, 0, host == hosts.end() ? std::string() : host->second, 0, {}});
  }
  applyRankFilter(rank_->text(), !rank_->text().trimmed().isEmpty());
}

}  // namespace shardscope::gui
