#pragma once
// The Estimator page's table: one row per ZeRO plan (EstimatorRow), sizes shown in GiB, the
// exact byte counts under Qt::UserRole so tests and exports never parse display text.

#include <QAbstractTableModel>

#include "app/gui/estimator_model.hpp"

namespace shardscope::gui {

class EstimatorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kPlan, kParams, kGradients, kOptimizer, kActivations, kBuffers, kGpuTotal,
    kCpuPerNode, kNvmePerNode, kCommPerStep, kCommTime, kFits, kColumnCount
  };

  explicit EstimatorTableModel(QObject* parent = nullptr);

  /// Replaces the rows (an empty vector clears the table).
  void setRows(std::vector<EstimatorRow> rows);
  const std::vector<EstimatorRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  /// The value of a numeric column in bytes (seconds for kCommTime); NaN where unknown.
  static double columnValue(const EstimatorRow& row, int column);

 private:
  std::vector<EstimatorRow> rows_;
};

}  // namespace shardscope::gui
