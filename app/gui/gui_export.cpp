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
    header << csv_field(model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
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

QString export_plot_png(QWidget* parent, QCustomPlot* plot, const QString& name) {
  const QString path = QFileDialog::getSaveFileName(parent, QObject::tr("Export PNG"), name + ".png",
                                                    QObject::tr("PNG (*.png)"));
  if (path.isEmpty()) return QString();
  const bool ok = plot->savePng(path, 0, 0, 2.0);  // 2x: sharp on high-DPI screens and in documents
  return ok ? QObject::tr("Wrote %1").arg(path) : QObject::tr("Could not write %1").arg(path);
}

void add_table_export_menu(QAbstractItemView* view, const QString& name, StatusSink status) {
  view->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(view, &QWidget::customContextMenuRequested, view, [view, name, status](const QPoint& pos) {
    QMenu menu(view);
    QAction* csv = menu.addAction(QObject::tr("Export CSV\u2026"));
    QAction* copy = menu.addAction(QObject::tr("Copy as CSV"));
    QAction* chosen = menu.exec(view->viewport()->mapToGlobal(pos));
    if (!view->model()) return;
    if (chosen == csv) {
      const QString message = export_model_csv(view, *view->model(), name);
      if (!message.isEmpty()) status(message);
    } else if (chosen == copy) {
      QApplication::clipboard()->setText(model_to_csv(*view->model()));
      status(QObject::tr("Copied %1 rows as CSV").arg(view->model()->rowCount()));
    }
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
