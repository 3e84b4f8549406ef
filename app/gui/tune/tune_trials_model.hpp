#pragma once
// The Tune page's live table: one row per trial as `shardscope tune` records it (trial, parameters,
// predicted memory, measured peak, the metric, status and its note), the status tinted (pruned
// grey, out of memory red, failed dark red, running blue) and the best trial bold with a star.

#include <QAbstractTableModel>

#include "app/gui/tune/tune_results.hpp"

namespace shardscope::gui {

class TuneTrialsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kTrial, kParameters, kPredicted, kPeak, kMetric, kStatus, kNote, kColumnCount };
  /// The raw value of a cell (bytes and metric as numbers), for sorting and tests.
  static constexpr int kSortRole = Qt::UserRole;

  explicit TuneTrialsModel(QObject* parent = nullptr);
  /// Replaces the rows; the metric column is titled `metric_header` ("tokens/s").
  void setRows(std::vector<TrialRow> rows, const QString& metric_header);
  const std::vector<TrialRow>& rows() const { return rows_; }
  const TrialRow& row(int index) const { return rows_[static_cast<std::size_t>(index)]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QVariant display(const TrialRow& row, int column) const;
  QVariant sortValue(const TrialRow& row, int column) const;
  QVariant toolTip(const TrialRow& row, int column) const;

  std::vector<TrialRow> rows_;
  QString metric_header_ = QStringLiteral("metric");
};

/// The colour a trial's status is drawn in, in the table and on the scatter.
QColor trial_mark_color(TrialMark mark);

}  // namespace shardscope::gui
