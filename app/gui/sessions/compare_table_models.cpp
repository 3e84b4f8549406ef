#include "app/gui/sessions/compare_table_models.hpp"

#include <QBrush>
#include <QFont>

namespace shardscope::gui {

QString format_summary_value(const std::string& field, double value) {
  if (field.find("bytes") != std::string::npos) {
    const double gib = value / double(1ull << 30);
    return gib >= 1 ? QString("%1 GiB").arg(gib, 0, 'f', 2) : QString("%1 MiB").arg(value / double(1 << 20), 0, 'f', 2);
  }
  if (field == "mfu" || field == "comm_fraction") return QString("%1 %").arg(100 * value, 0, 'f', 2);
  return QString::number(value, 'g', 5);
}

SummaryDeltaModel::SummaryDeltaModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryDeltaModel::setComparison(const std::vector<SessionRef>& sessions,
                                      const std::vector<sessions::SummaryDelta>& rows) {
  beginResetModel();
  sessions_ = sessions;
  rows_ = rows;
  endResetModel();
}

bool SummaryDeltaModel::isBest(int row, std::size_t session) const {
  const auto& r = rows_[static_cast<std::size_t>(row)];
  if (session >= r.values.size() || !r.values[session]) return false;
  std::optional<double> best, worst;
  for (const auto& v : r.values) {
    if (!v) continue;
    if (!best || (r.lower_is_better ? *v < *best : *v > *best)) best = *v;
    if (!worst || (r.lower_is_better ? *v > *worst : *v < *worst)) worst = *v;
  }
  // Nothing is better when every known value is the same (or only one is known); ties share it.
  return *best != *worst && *r.values[session] == *best;
}

int SummaryDeltaModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SummaryDeltaModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || sessions_.empty() ? 0 : static_cast<int>(2 * sessions_.size());
}

QVariant SummaryDeltaModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  const int c = index.column();
  if (c == 0) {
    if (role == Qt::DisplayRole) return QString::fromStdString(r.field);
    if (role == Qt::ToolTipRole) return r.lower_is_better ? tr("lower is better") : tr("higher is better");
    return {};
  }
  // Column 1: baseline value; then per later session a value column and a delta column.
  const std::size_t s = c == 1 ? 0 : static_cast<std::size_t>(c / 2);
  const bool is_delta = c > 1 && c % 2 == 1;
  const auto& value = is_delta ? r.delta[s] : r.values[s];
  const bool best = !is_delta && isBest(index.row(), s);
  switch (role) {
    case kValueRole: return value ? QVariant(*value) : QVariant();
    case kBestRole: return best;
    case Qt::TextAlignmentRole: return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole: {
      QFont font;
      font.setBold(best);
      return best ? QVariant(font) : QVariant();
    }
    case Qt::ForegroundRole:
      if (best) return QBrush(QColor(20, 130, 40));
      if (is_delta && value && *value != 0) {
        const bool worse = r.lower_is_better ? *value > 0 : *value < 0;
        return QBrush(worse ? QColor(190, 40, 40) : QColor(20, 130, 40));
      }
      return {};
    case Qt::DisplayRole:
      if (!value) return QStringLiteral("-");
      if (!is_delta) return format_summary_value(r.field, *value);
      {
        QString text = (*value > 0 ? "+" : "") + format_summary_value(r.field, *value);
        if (r.delta_percent[s]) text += QString(" (%1%2 %)").arg(*r.delta_percent[s] > 0 ? "+" : "").arg(*r.delta_percent[s], 0, 'f', 1);
        return text;
      }
    default: return {};
  }
}

QVariant SummaryDeltaModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return tr("quantity");
  const std::size_t s = section == 1 ? 0 : static_cast<std::size_t>(section / 2);
  const QString label = QString::fromStdString(sessions_[s].label);
  if (section == 1) return tr("%1 (baseline)").arg(label);
  return section % 2 == 0 ? label : tr("\u0394 vs baseline");
}

DiffTableModel::DiffTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiffTableModel::setRows(const std::vector<SessionRef>& sessions, std::vector<sessions::DiffRow> rows) {
  beginResetModel();
  sessions_ = sessions;
  all_ = std::move(rows);
  rebuild();
  endResetModel();
}

void DiffTableModel::setDiffOnly(bool diff_only) {
  beginResetModel();
  diff_only_ = diff_only;
  rebuild();
  endResetModel();
}

void DiffTableModel::rebuild() {
  shown_.clear();
  // One session has nothing to differ from: it shows every row.
  const bool single = sessions_.size() < 2;
  for (const auto& row : all_)
    if (row.differs || !diff_only_ || single) shown_.push_back(&row);
}

QString DiffTableModel::emptyNote() const {
  if (!shown_.empty() || sessions_.size() < 2) return {};
  if (all_.empty()) return tr("Nothing recorded to compare.");
  return tr("Identical: all %1 rows agree across the %2 sessions (untick \"differences only\" to see them).")
      .arg(all_.size())
      .arg(sessions_.size());
}

int DiffTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(shown_.size());
}

int DiffTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(sessions_.size() + 1);
}

QVariant DiffTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto& row = *shown_[static_cast<std::size_t>(index.row())];
  if (index.column() == 0) {
    if (role == Qt::DisplayRole) return QString::fromStdString(row.path);
    if (role == Qt::FontRole && row.differs) {
      QFont font;
      font.setBold(true);
      return font;
    }
    return {};
  }
  const auto& value = row.values[static_cast<std::size_t>(index.column() - 1)];
  if (role == Qt::DisplayRole) return value ? QString::fromStdString(*value) : tr("(absent)");
  // A long value (a command line) is elided in its cell; the tooltip keeps all of it.
  if (role == Qt::ToolTipRole && value) return QString::fromStdString(*value);
  if (role == Qt::ForegroundRole && !value) return QBrush(Qt::gray);
  // A value that differs from the baseline's is highlighted, as a diff view does.
  if (role == Qt::BackgroundRole && index.column() > 1 && value != row.values[0]) return QBrush(QColor(255, 243, 205));
  return {};
}

QVariant DiffTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return tr("path");
  return QString::fromStdString(sessions_[static_cast<std::size_t>(section - 1)].label);
}

}  // namespace shardscope::gui
