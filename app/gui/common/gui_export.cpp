#include "app/gui/common/gui_export.hpp"

#include <algorithm>

#include <QAbstractItemModel>
#include <QAbstractItemView>
#include <QApplication>
#include <QClipboard>
#include <QMenu>
#include <QFileDialog>
#include <QItemSelectionModel>
#include <QSaveFile>
#include <qcustomplot.h>

#include "app/gui/sessions/compare_charts.hpp"

namespace shardscope::gui {
namespace {

QString csv_field(QString text) {
  if (!text.contains(',') && !text.contains('"') && !text.contains('\n')) return text;
  return '"' + text.replace('"', "\"\"") + '"';
}

}  // namespace

QString model_to_csv(const QAbstractItemModel& model, const QList<int>& rows) {
  QStringList lines;
  QStringList header;
  for (int c = 0; c < model.columnCount(); ++c)
    // A header drawn on several lines ("CPU\nGiB\n/node") is one line in the file ("CPU GiB /node").
    header << csv_field(model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString().split('\n', Qt::SkipEmptyParts).join(' '));
  lines << header.join(',');
  QList<int> order = rows;
  if (order.isEmpty())
    for (int r = 0; r < model.rowCount(); ++r) order << r;
  for (int r : order) {
    QStringList cells;
    for (int c = 0; c < model.columnCount(); ++c) cells << csv_field(model.data(model.index(r, c)).toString());
    lines << cells.join(',');
  }
  return lines.join('\n') + '\n';
}

QString write_model_csv(const QAbstractItemModel& model, const QString& path, const QList<int>& rows) {
  QSaveFile file(path);  // written to a temporary name, renamed on commit
  const QByteArray csv = model_to_csv(model, rows).toUtf8();
  if (!file.open(QIODevice::WriteOnly) || file.write(csv) != csv.size() || !file.commit())
    return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
  return QString();
}

QString export_model_csv(QWidget* parent, const QAbstractItemModel& model, const QString& name, const QList<int>& rows) {
  const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export CSV"), name + ".csv",
                                                    QObject::tr("CSV (*.csv)"));
  if (path.isEmpty()) return QString();
  const QString error = write_model_csv(model, path, rows);
  return error.isEmpty() ? QObject::tr("Wrote %1").arg(path) : error;
}

LegendForExport::LegendForExport(QCustomPlot* plot) : plot_(plot), was_visible_(plot->legend->visible()) {
  QCPLegend* legend = plot->legend;
  legend->setVisible(legend->itemCount() > 0);
  QCPLayoutInset* inset = plot->axisRect()->insetLayout();
  if (legend->layout() != inset || legend->itemCount() == 0) return;
  for (int i = 0; i < inset->elementCount(); ++i)
    if (inset->elementAt(i) == legend) inset_alignment_ = inset->insetAlignment(i);
  wrap_ = legend->wrap();
  fill_order_ = legend->fillOrder();
  margins_ = legend->margins();
  row_spacing_ = legend->rowSpacing();
  column_spacing_ = legend->columnSpacing();
  int widest = 1;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i)) widest = std::max(widest, item->minimumOuterSizeHint().width());
  place_legend_below(plot, 1);  // its margins and spacing as they will be, then as many a row as fit
  const int room = plot->width() - legend->margins().left() - legend->margins().right() + legend->columnSpacing();
  place_legend_below(plot, std::clamp(room / (widest + legend->columnSpacing()), 1, legend->itemCount()));
  moved_ = true;
}

LegendForExport::~LegendForExport() {
  QCPLegend* legend = plot_->legend;
  if (moved_) {
    plot_->plotLayout()->take(legend);
    plot_->plotLayout()->simplify();
    plot_->axisRect()->insetLayout()->addElement(legend, inset_alignment_);
    legend->setWrap(wrap_);
    legend->setFillOrder(static_cast<QCPLayoutGrid::FillOrder>(fill_order_), true);
    legend->setMargins(margins_);
    legend->setRowSpacing(row_spacing_);
    legend->setColumnSpacing(column_spacing_);
  }
  legend->setVisible(was_visible_);
  plot_->replot();
}

bool save_plot_png(QCustomPlot* plot, const QString& path, double scale) {
  const LegendForExport legend(plot);
  return plot->savePng(path, 0, 0, scale);
}

QString export_plot_png(QWidget* parent, QCustomPlot* plot, const QString& name) {
  const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export PNG"), name + ".png",
                                                    QObject::tr("PNG (*.png)"));
  if (path.isEmpty()) return QString();
  const bool ok = save_plot_png(plot, path);  // 2x: sharp on high-DPI screens and in documents
  return ok ? QObject::tr("Wrote %1").arg(path) : QObject::tr("Could not write %1").arg(path);
}

QList<int> selected_rows(const QAbstractItemView* view) {
  QList<int> rows;
  if (!view->selectionModel()) return rows;
  for (const QModelIndex& index : view->selectionModel()->selectedRows()) rows << index.row();
  std::sort(rows.begin(), rows.end());
  return rows;
}

void add_table_export_actions(QMenu& menu, QAbstractItemView* view, const QString& name, StatusSink status) {
  QObject::connect(menu.addAction(QObject::tr("Export CSV\u2026")), &QAction::triggered, view, [view, name, status] {
    if (!view->model()) return;
    const QString message = export_model_csv(view, *view->model(), name);
    if (!message.isEmpty()) status(message);
  });
  QObject::connect(menu.addAction(QObject::tr("Copy as CSV")), &QAction::triggered, view, [view, status] {
    if (!view->model()) return;
    QApplication::clipboard()->setText(model_to_csv(*view->model()));
    status(QObject::tr("Copied %1 rows as CSV").arg(view->model()->rowCount()));
  });
}

void add_table_export_menu(QAbstractItemView* view, const QString& name, StatusSink status) {
  view->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(view, &QWidget::customContextMenuRequested, view, [view, name, status](const QPoint& pos) {
    QMenu menu(view);
    add_table_export_actions(menu, view, name, status);
    menu.exec(view->viewport()->mapToGlobal(pos));
  });
}

void add_plot_export_menu(QCustomPlot* plot, const QString& name, StatusSink status) {
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot, name, status](const QPoint& pos) {
    QMenu menu(plot);
    QAction* png = menu.addAction(QObject::tr("Export PNG\u2026"));
    QAction* reset = menu.addAction(QObject::tr("Reset view"));
    QAction* chosen = menu.exec(plot->mapToGlobal(pos));
    if (chosen == png) {
      const QString message = export_plot_png(plot, plot, name);
      if (!message.isEmpty()) status(message);
    } else if (chosen == reset) {
      plot->rescaleAxes();
      plot->replot();
    }
  });
}

}  // namespace shardscope::gui
