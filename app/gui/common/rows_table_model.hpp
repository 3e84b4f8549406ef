#pragma once
// A read-only table of prepared rows (display text plus a raw sort value per cell), for the small
// tables of the profile view: top kernels, collectives.

#include <QAbstractTableModel>
#include <QStringList>
#include <QVariant>

namespace shardscope::gui {

class RowsTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  /// The raw value of a cell (numbers as numbers), for sorting and tests.
  static constexpr int kSortRole = Qt::UserRole;

  explicit RowsTableModel(QStringList headers, QObject* parent = nullptr);
  /// Each row holds one QVariant per header: numbers are shown formatted, text as is.
  void setRows(std::vector<QVariantList> rows);
  /// Replaces the headers and the rows (tables whose columns depend on the data: timer names).
  void setTable(QStringList headers, std::vector<QVariantList> rows);
  const QVariantList& row(int index) const { return rows_[static_cast<std::size_t>(index)]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QStringList headers_;
  std::vector<QVariantList> rows_;
};

}  // namespace shardscope::gui
