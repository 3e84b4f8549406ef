#include "app/gui/gui_export.hpp"

#include <QAbstractItemModel>
#include <QAbstractItemView>
#include <QApplication>
#include <QClipboard>
#include <QMenu>
#include <QFileDialog>
#include <QSaveFile>
#include <qcustomplot.h>

namespace shardscope::gui {
namespace {

QString csv_field(QString text) {
  if (!text.contains(',') && !text.contains('"') && !text.contains('\n')) return text;
  return '"' + text.replace('"', "\"\"") + '"';
}

}  // namespace

QString model_to_csv(const QAbstractItemModel& model) {
  QStringList lines;
  QStringList header;
  for (int c = 0; c < model.columnCount(); ++c)
    // A header drawn on several lines ("CPU\nGiB\n/node") is one line in the file ("CPU GiB /node").
    header << csv_field(model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString().split('\n', Qt::SkipEmptyParts).join(' '));
  lines << header.join(',');
  for (int r = 0; r < model.rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < model.columnCount(); ++c) cells << csv_field(model.data(model.index(r, c)).toString());
    lines << cells.join(',');
  }
  return lines.join('\n') + '\n';
}

QString write_model_csv(const QAbstractItemModel& model, const QString& path) {
  QSaveFile file(path);  // written to a temporary name, renamed on commit
  const QByteArray csv = model_to_csv(model).toUtf8();
  if (!file.open(QIODevice::WriteOnly) || file.write(csv) != csv.size() || !file.commit())
    return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
  return QString();
}

QString export_model_csv(QWidget* parent, const QAbstractItemModel& model, const QString& name) {
  const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export CSV"), name + ".csv",
                                                    QObject::tr("CSV (*.csv)"));
  if (path.isEmpty()) return QString();
  const QString error = write_model_csv(model, path);
  return error.isEmpty() ? QObject::tr("Wrote %1").arg(path) : error;
}

bool save_plot_png(QCustomPlot* plot, const QString& path, double scale) {
  const bool was_visible = plot->legend->visible();
  plot->legend->setVisible(plot->legend->itemCount() > 0);
  const bool ok = plot->savePng(path, 0, 0, scale);
  plot->legend->setVisible(was_visible);
  plot->replot();
  return ok;
}

QString export_plot_png(QWidget* parent, QCustomPlot* plot, const QString& name) {
  const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export PNG"), name + ".png",
                                                    QObject::tr("PNG (*.png)"));
  if (path.isEmpty()) return QString();
  const bool ok = save_plot_png(plot, path);  // 2x: sharp on high-DPI screens and in documents
  return ok ? QObject::tr("Wrote %1").arg(path) : QObject::tr("Could not write %1").arg(path);
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
