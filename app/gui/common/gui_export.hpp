#pragma once
// Export of what a page shows: any table model as CSV (RFC 4180 quoting, header row, what the
// cells display) and any QCustomPlot chart as PNG, written atomically as the Estimator page does.

#include <functional>

#include <QList>
#include <QMargins>
#include <QString>

class QAbstractItemModel;
class QAbstractItemView;
class QCustomPlot;
class QMenu;
class QWidget;

namespace shardscope::gui {

/// The model's header and rows as CSV text (DisplayRole): the rows `rows` in that order, or every
/// row the model exposes when `rows` is empty.
QString model_to_csv(const QAbstractItemModel& model, const QList<int>& rows = {});
/// Writes `model` (those rows) as CSV to `path` through QSaveFile; returns "" or the error.
QString write_model_csv(const QAbstractItemModel& model, const QString& path, const QList<int>& rows = {});
/// Asks for a file name (suggesting `name`.csv) and writes the CSV; returns the status message.
QString export_model_csv(QWidget* parent, const QAbstractItemModel& model, const QString& name, const QList<int>& rows = {});
/// The rows selected in `view`, in view order (empty when none is).
QList<int> selected_rows(const QAbstractItemView* view);
/// While alive, `plot`'s legend is shown, and one that sits inside the axes (QCustomPlot's place, the
/// Compare page's curves) is under them, as many entries to a row as the width holds: an exported
/// image names its curves without covering them. The destructor puts the legend back as it was.
class LegendForExport {
 public:
  explicit LegendForExport(QCustomPlot* plot);
  ~LegendForExport();
  LegendForExport(const LegendForExport&) = delete;
  LegendForExport& operator=(const LegendForExport&) = delete;

 private:
  QCustomPlot* plot_;
  bool was_visible_;
  bool moved_ = false;
  Qt::Alignment inset_alignment_;
  int wrap_ = 0, row_spacing_ = 0, column_spacing_ = 0;
  int fill_order_ = 0;
  QMargins margins_;
};

/// Saves `plot` as PNG at `scale` times its size with its legend shown (a chart whose page names
/// the colours elsewhere hides it on screen; an exported image must carry it). The on-screen
/// legend state is restored. False when the file cannot be written.
bool save_plot_png(QCustomPlot* plot, const QString& path, double scale = 2.0);
/// Asks for a file name (suggesting `name`.png) and saves the plot at 2x; returns the status message.
QString export_plot_png(QWidget* parent, QCustomPlot* plot, const QString& name);

using StatusSink = std::function<void(const QString&)>;
/// Adds "Export CSV..." and "Copy as CSV" of `view`'s model to `menu`.
void add_table_export_actions(QMenu& menu, QAbstractItemView* view, const QString& name, StatusSink status);
/// A context menu on `view` with "Export CSV..." (and "Copy as CSV"), reporting to `status`.
void add_table_export_menu(QAbstractItemView* view, const QString& name, StatusSink status);
/// A context menu on `plot` with "Export PNG..." and "Reset view", reporting to `status`.
void add_plot_export_menu(QCustomPlot* plot, const QString& name, StatusSink status);

}  // namespace shardscope::gui
