#pragma once
// The tables of a comparison: summary quantities with their deltas against the baseline (the
// better value of each row in bold green), and config / environment diffs with a "differences
// only" switch, as W&B's Run Comparer has.

#include <QAbstractTableModel>

#include "app/gui/sessions/compare_data.hpp"

namespace shardscope::gui {

class SummaryDeltaModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  /// The raw value of a cell (double, or invalid when unknown); columns after 0 alternate
  /// value and delta per session, the baseline having no delta column.
  static constexpr int kValueRole = Qt::UserRole;
  /// True on the cell holding the row's best value.
  static constexpr int kBestRole = Qt::UserRole + 1;

  explicit SummaryDeltaModel(QObject* parent = nullptr);
  void setComparison(const std::vector<SessionRef>& sessions, const std::vector<sessions::SummaryDelta>& rows);
  /// True when session `session` holds the best value of `row` (ties share it; none when all agree).
  bool isBest(int row, std::size_t session) const;
  /// The column of session `s`'s value.
  static int valueColumn(std::size_t s) { return s == 0 ? 1 : static_cast<int>(2 * s); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<SessionRef> sessions_;
  std::vector<sessions::SummaryDelta> rows_;
};

class DiffTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit DiffTableModel(QObject* parent = nullptr);
  void setRows(const std::vector<SessionRef>& sessions, std::vector<sessions::DiffRow> rows);
  /// Hides rows whose values all agree.
  void setDiffOnly(bool diff_only);
  bool diffOnly() const { return diff_only_; }
  /// What an empty table means, "" while it shows rows: "identical" when every row agrees and only
  /// differences are shown (an empty table alone reads as "nothing loaded").
  QString emptyNote() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  void rebuild();

  std::vector<SessionRef> sessions_;
  std::vector<sessions::DiffRow> all_;
  std::vector<const sessions::DiffRow*> shown_;
  bool diff_only_ = true;
};

/// A summary value as the CLI prints it: bytes in GiB/MiB, fractions as percent, else 4 digits.
QString format_summary_value(const std::string& field, double value);

}  // namespace shardscope::gui
