#pragma once
// The Estimator page's table: one row per ZeRO plan (EstimatorRow), sizes shown in the estimate's
// unit (GiB unless --units GB) with the unit in the header so the columns stay narrow, times and
// fit as the CLI's table prints them; the exact byte counts under Qt::UserRole so tests and
// exports never parse display text. The recommended plan is bold and starred, the requested one
// marked with a diamond.

#include <QAbstractTableModel>

#include "app/gui/estimator/estimator_model.hpp"

namespace shardscope::gui {

class EstimatorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kPlan, kParams, kGradients, kOptimizer, kActivations, kBuffers, kGpuTotal,
    kCpuPerNode, kNvmePerNode, kCommPerStep, kCommTime, kFits, kColumnCount
  };

  explicit EstimatorTableModel(QObject* parent = nullptr);

  /// Replaces the rows with the view's (a view without rows clears the table).
  void setView(const EstimatorView& view);
  const std::vector<EstimatorRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  /// The value of a numeric column in bytes (seconds for kCommTime); NaN where unknown.
  static double columnValue(const EstimatorRow& row, int column);

 private:
  std::vector<EstimatorRow> rows_;
  estimator::ByteUnit unit_ = estimator::ByteUnit::kGiB;
};

/// The markers in the plan column and the chart: recommended and requested.
inline constexpr const char* kRecommendedMark = "\u2605";  // ★
inline constexpr const char* kRequestedMark = "\u25c6";    // ◆

}  // namespace shardscope::gui
