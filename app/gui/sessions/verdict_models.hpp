#pragma once
// The Verdict and Trend tabs' tables: a TextTable (verdict_data.hpp) shown as it is, each row
// tinted by its tone (a regression red, an improvement green, a real change under its threshold
// amber, a flipped DeepSpeed default blue) and its verdict cell in the verdict's colour.

#include <QAbstractTableModel>
#include <QColor>

#include "app/gui/sessions/verdict_data.hpp"

namespace shardscope::gui {

/// The colour a verdict is written in (also the trend chart's markers); black for kPlain.
QColor tone_color(RowTone tone);
/// The faint background of a row of that tone (invalid for plain and within-noise rows).
QColor tone_background(RowTone tone);

class TextTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kValueRole = Qt::UserRole;     ///< the cell's number (double), or its text
  static constexpr int kToneRole = Qt::UserRole + 1;  ///< the row's RowTone (int)

  explicit TextTableModel(QObject* parent = nullptr);
  void setTable(TextTable table);
  const TextTable& table() const { return table_; }
  /// The column painted in the row's tone colour (the verdict), -1 for none.
  void setToneColumn(int column) { tone_column_ = column; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  TextTable table_;
  int tone_column_ = -1;
};

}  // namespace shardscope::gui
