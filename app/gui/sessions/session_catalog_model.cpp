#include "app/gui/sessions/session_catalog_model.hpp"

#include <QColor>
#include <QDateTime>
#include <QFileInfo>

namespace shardscope::gui {
namespace {

QString join(const std::vector<std::string>& items) {
  QStringList list;
  for (const auto& s : items) list << QString::fromStdString(s);
  return list.join(", ");
}

QString started_text(const std::optional<double>& t) {
  if (!t) return QString();
  return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(*t * 1000)).toString("yyyy-MM-dd HH:mm:ss");
}

qint64 step_count(const sessions::SessionInfo& info) {
  return info.first_step && info.last_step ? *info.last_step - *info.first_step + 1 : 0;
}

}  // namespace

QString hosts_summary(const std::vector<sessions::SessionHost>& hosts) {
  if (hosts.empty()) return QObject::tr("unknown");
  if (hosts.size() == 1) return QString::fromStdString(hosts.front().host);
  QStringList parts;
  for (const auto& h : hosts) {
    const QString name = QString::fromStdString(h.host);
    parts << (h.ranks.size() == 1 ? QObject::tr("%1 (1 rank)").arg(name)
                                  : QObject::tr("%1 (%2 ranks)").arg(name).arg(h.ranks.size()));
  }
  return parts.join(", ");
}

SessionCatalogModel::SessionCatalogModel(QObject* parent) : QAbstractTableModel(parent) {}

void SessionCatalogModel::setRows(std::vector<CatalogRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

SessionRef SessionCatalogModel::ref(int index) const {
  const CatalogRow& r = row(index);
  const QString file = QFileInfo(QString::fromStdString(r.file)).fileName();
  const std::string label = (r.info.name.empty() ? "session" : r.info.name) + " #" + std::to_string(r.info.id) +
                            " (" + file.toStdString() + ")";
  return {r.file, r.info.id, label};
}

int SessionCatalogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SessionCatalogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant SessionCatalogModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  const auto& info = r.info;
  if (role == kSortRole) {
    switch (index.column()) {
      case kStarted: return info.started_at.value_or(0);
      case kSteps: return step_count(info);
      case kRanks: return info.world_size;
      case kId: return static_cast<qint64>(info.id);
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ToolTipRole) {
    return QObject::tr("%1\nuid %2\nconfig %3\ntags: %4\nfile %5")
        .arg(QString::fromStdString(info.name), QString::fromStdString(info.uid),
             QString::fromStdString(info.config_hash), join(info.tags), QString::fromStdString(r.file));
  }
  if (role == Qt::ForegroundRole && index.column() == kStatus) {
    if (info.status == "failed") return QColor(200, 30, 30);
    if (info.status == "running") return QColor(20, 110, 200);
    return {};
  }
  if (role == Qt::TextAlignmentRole && (index.column() == kSteps || index.column() == kRanks || index.column() == kId))
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kName: return QString::fromStdString(info.name);
    case kStarted: return started_text(info.started_at);
    case kStatus: return QString::fromStdString(info.status);
    case kSteps: return step_count(info);
    case kRanks: return info.world_size;
    case kHosts: return hosts_summary(r.hosts);
    case kTags: return join(info.tags);
    case kVersion: return QString::fromStdString(info.shardscope_version);
    case kConfig: return QString::fromStdString(info.config_hash.substr(0, 8));
    case kFile: return QFileInfo(QString::fromStdString(r.file)).fileName();
    case kId: return static_cast<qint64>(info.id);
  }
  return {};
}

QVariant SessionCatalogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* kHeaders[] = {"Name", "Started", "Status", "Steps", "Ranks", "Hosts", "Tags", "Version", "Config", "File", "Id"};
  return tr(kHeaders[section]);
}

SessionFilterProxy::SessionFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(SessionCatalogModel::kSortRole);
}

void SessionFilterProxy::setText(const QString& text) {
  words_ = text.split(' ', Qt::SkipEmptyParts);
  invalidateFilter();
}

void SessionFilterProxy::setStatus(const QString& status) {
  status_ = status;
  invalidateFilter();
}

bool SessionFilterProxy::filterAcceptsRow(int source_row, const QModelIndex&) const {
  const auto* model = static_cast<const SessionCatalogModel*>(sourceModel());
  const CatalogRow& r = model->row(source_row);
  if (!status_.isEmpty() && QString::fromStdString(r.info.status) != status_) return false;
  const QString haystack = QStringList{QString::fromStdString(r.info.name), QString::fromStdString(r.info.config_hash),
                                       QString::fromStdString(r.info.shardscope_version), hosts_summary(r.hosts),
                                       join(r.info.tags), QString::fromStdString(r.file),
                                       QString::fromStdString(r.info.uid), QString::fromStdString(r.info.status)}
                               .join(' ');
  for (const QString& word : words_)
    if (!haystack.contains(word, Qt::CaseInsensitive)) return false;
  return true;
}

}  // namespace shardscope::gui
