#include "app/gui/common/rows_table_model.hpp"

namespace shardscope::gui {

RowsTableModel::RowsTableModel(QStringList headers, QObject* parent)
    : QAbstractTableModel(parent), headers_(std::move(headers)) {}

void RowsTableModel::setRows(std::vector<QVariantList> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void RowsTableModel::setTable(QStringList headers, std::vector<QVariantList> rows) {
  beginResetModel();
  headers_ = std::move(headers);
  rows_ = std::move(rows);
  endResetModel();
}

int RowsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RowsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : headers_.size(); }

QVariant RowsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const QVariant& v = rows_[static_cast<std::size_t>(index.row())].value(index.column());
  const bool number = v.typeId() == QMetaType::Double || v.typeId() == QMetaType::LongLong || v.typeId() == QMetaType::Int;
  switch (role) {
    case kSortRole: return v;
    case Qt::TextAlignmentRole: return number ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DisplayRole:
      if (v.typeId() == QMetaType::Double) return QString::number(v.toDouble(), 'g', 5);
      return v;
    case Qt::ToolTipRole: return v.typeId() == QMetaType::QString ? v : QVariant();
    default: return {};
  }
}

QVariant RowsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return headers_.value(section);
}

}  // namespace shardscope::gui
