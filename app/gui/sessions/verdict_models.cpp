#include "app/gui/sessions/verdict_models.hpp"

#include <QFont>

namespace shardscope::gui {

QColor tone_color(RowTone tone) {
  switch (tone) {
    case RowTone::kRegression: return QColor(0xc6, 0x28, 0x28);
    case RowTone::kImprovement: return QColor(0x2e, 0x7d, 0x32);
    case RowTone::kWithinThreshold: return QColor(0xb2, 0x6a, 0x00);
    case RowTone::kWithinNoise: return QColor(0x61, 0x61, 0x61);
    case RowTone::kDefaultFlip: return QColor(0x15, 0x65, 0xc0);
    case RowTone::kPlain: break;
  }
  return QColor(Qt::black);
}

QColor tone_background(RowTone tone) {
  switch (tone) {
    case RowTone::kRegression: return QColor(0xfd, 0xe4, 0xe4);
    case RowTone::kImprovement: return QColor(0xe3, 0xf4, 0xe4);
    case RowTone::kWithinThreshold: return QColor(0xff, 0xf3, 0xd6);
    case RowTone::kDefaultFlip: return QColor(0xe3, 0xee, 0xfb);
    case RowTone::kWithinNoise:
    case RowTone::kPlain: break;
  }
  return {};
}

TextTableModel::TextTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TextTableModel::setTable(TextTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int TextTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(table_.rows.size()); }

int TextTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.headers.size());
}

QVariant TextTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const TableRow& row = table_.rows[static_cast<std::size_t>(index.row())];
  if (static_cast<std::size_t>(index.column()) >= row.cells.size()) return {};
  const TableCell& cell = row.cells[static_cast<std::size_t>(index.column())];
  switch (role) {
    case Qt::DisplayRole: return QString::fromStdString(cell.text);
    case kValueRole: return cell.value ? QVariant(*cell.value) : QVariant(QString::fromStdString(cell.text));
    case kToneRole: return static_cast<int>(row.tone);
    case Qt::ToolTipRole: return QString::fromStdString(row.tooltip.empty() ? cell.text : row.tooltip);
    case Qt::TextAlignmentRole: return cell.value ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::BackgroundRole: {
      const QColor c = tone_background(row.tone);
      return c.isValid() ? QVariant(c) : QVariant();
    }
    case Qt::ForegroundRole:
      return index.column() == tone_column_ && row.tone != RowTone::kPlain ? QVariant(tone_color(row.tone)) : QVariant();
    case Qt::FontRole:
      if (index.column() == tone_column_ && (row.tone == RowTone::kRegression || row.tone == RowTone::kImprovement)) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    default: return {};
  }
}

QVariant TextTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 ||
      static_cast<std::size_t>(section) >= table_.headers.size())
    return {};
  return QString::fromStdString(table_.headers[static_cast<std::size_t>(section)]);
}

}  // namespace shardscope::gui
