#pragma once
// Export of what a page shows: any table model as CSV (RFC 4180 quoting, header row, what the
// cells display) and any QCustomPlot chart as PNG, written atomically as the Estimator page does.

#include <functional>

#include <QString>

class QAbstractItemModel;
class QAbstractItemView;
class QCustomPlot;
class QMenu;
class QWidget;

namespace shardscope::gui {

/// The model's header and rows as CSV text (DisplayRole, every row the model exposes).
QString model_to_csv(const QAbstractItemModel& model);
/// Writes `model` as CSV to `path` through QSaveFile; returns "" or the error.
QString write_model_csv(const QAbstractItemModel& model, const QString& path);
/// Asks for a file name (suggesting `name`.csv) and writes the CSV; returns the status message.
QString export_model_csv(QWidget* parent, const QAbstractItemModel& model, const QString& name);
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
