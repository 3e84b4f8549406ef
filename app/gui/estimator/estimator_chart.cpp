#include "app/gui/estimator/estimator_chart.hpp"

#include <qcustomplot.h>

#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/estimator/estimator_model.hpp"
#include "app/gui/estimator/estimator_table_model.hpp"
#include "estimator/byte_units.hpp"

namespace shardscope::gui {
namespace {

struct Part {
  const char* name;
  QColor color;
  double EstimatorRow::*field;
};

// The peak as the engine reaches it, part by part: the parts add up to the bar's height, the
// allocator's peak (the table keeps the ZeRO model-state columns).
const Part kParts[] = {
    {"States at peak", QColor(31, 119, 180), &EstimatorRow::gpu_resident},
    {"Activations", QColor(148, 103, 189), &EstimatorRow::gpu_peak_activations},
    {"Buffers", QColor(140, 86, 75), &EstimatorRow::gpu_buffers},
    {"cuBLAS", QColor(127, 127, 127), &EstimatorRow::gpu_workspace},
};

// The held sweep's error band on each bar, and the device-level bound the fit is judged on as a
// short black mark (docs/estimator.md, "The peak").
void add_uncertainty(QCustomPlot* plot, QCPBars* top, const EstimatorView& view, double unit, double& highest) {
  auto* band = new QCPErrorBars(plot->xAxis, plot->yAxis);
  band->setName(QObject::tr("± error"));
  band->setDataPlottable(top);
  band->setPen(QPen(Qt::black, 1.2));
  QVector<double> errors;
  for (const auto& row : view.rows) errors << row.gpu_error_band / unit;
  band->setData(errors);
  auto* bound = new QCPGraph(plot->xAxis, plot->yAxis);
  bound->setName(QObject::tr("fit bound"));
  bound->setLineStyle(QCPGraph::lsNone);
  bound->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssPlus, Qt::black, 9));
  for (std::size_t i = 0; i < view.rows.size(); ++i) {
    bound->addData(static_cast<double>(i + 1), view.rows[i].gpu_device_upper / unit);
    highest = std::max(highest, view.rows[i].gpu_device_upper / unit);
  }
}

/// "Z3\no:cpu\np:cpu": short lines fit under a bar without rotation, so no label is clipped at the
/// plot's edge (QCustomPlot skips such a label) and neighbours do not run into each other.
QString tick_label(const EstimatorRow& row) {
  QString label = QString::fromStdString(row.short_label);
  label.replace(' ', '\n');
  return label;
}

void add_memory_line(QCustomPlot* plot, double value, const QPen& pen, const QString& text, Qt::Alignment align) {
  auto* line = new QCPItemStraightLine(plot);
  line->point1->setCoords(0, value);
  line->point2->setCoords(1, value);
  line->setPen(pen);
  auto* label = new QCPItemText(plot);
  label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
  label->position->setTypeY(QCPItemPosition::ptPlotCoords);
  label->position->setCoords(0.01, value);
  label->setPositionAlignment(Qt::AlignLeft | align);
  label->setText(text);
  label->setColor(pen.color());
  label->setBrush(QColor(255, 255, 255, 210));  // readable where it crosses a bar
  label->setPadding(QMargins(2, 0, 2, 0));
}

void add_plan_marks(QCustomPlot* plot, const EstimatorView& view, double unit) {
  for (std::size_t i = 0; i < view.rows.size(); ++i) {
    const EstimatorRow& row = view.rows[i];
    QString mark = row.recommended ? QString(kRecommendedMark) : QString();
    if (row.requested) mark += kRequestedMark;
    if (mark.isEmpty()) continue;
    auto* text = new QCPItemText(plot);
    text->position->setCoords(static_cast<double>(i + 1), row.gpu_total / unit);
    text->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    text->setText(mark);
    text->setFont(QFont(plot->font().family(), 11, QFont::Bold));
    text->setColor(row.recommended ? QColor(0, 120, 0) : QColor(40, 40, 40));
  }
}

}  // namespace

void draw_estimator_chart(QCustomPlot* plot, const EstimatorView& view) {
  plot->clearPlottables();
  plot->clearItems();
  plot->legend->setVisible(!view.rows.empty());
  const auto unit_kind = view.estimate ? view.estimate->options.display_unit : estimator::ByteUnit::kGiB;
  const double unit = unit_kind == estimator::ByteUnit::kGB ? estimator::kGB : estimator::kGiB;
  const QString unit_name = estimator::unit_name(unit_kind);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  QVector<double> keys;
  double highest = 1;
  for (std::size_t i = 0; i < view.rows.size(); ++i) {
    keys << static_cast<double>(i + 1);
    ticker->addTick(static_cast<double>(i + 1), tick_label(view.rows[i]));
    highest = std::max(highest, view.rows[i].gpu_total / unit);
  }
  QCPBars* below = nullptr;
  for (const Part& part : kParts) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(QObject::tr(part.name));
    bars->setPen(Qt::NoPen);
    bars->setBrush(part.color);
    bars->setWidth(0.6);
    QVector<double> values;
    for (const auto& row : view.rows) values << row.*(part.field) / unit;
    bars->setData(keys, values, true);
    if (below) bars->moveAbove(below);
    below = bars;
  }
  if (below && !view.rows.empty()) add_uncertainty(plot, below, view, unit, highest);
  // Fit is judged against the usable memory (the GPU's less the margin): that is the red line.
  if (view.usable_gpu_bytes) {
    const double usable = *view.usable_gpu_bytes / unit;
    add_memory_line(plot, usable, QPen(Qt::red, 2, Qt::DashLine),
                    QObject::tr("usable %1 %2: fits below this line").arg(usable, 0, 'f', 1).arg(unit_name), Qt::AlignTop);
    highest = std::max(highest, usable);
  }
  if (view.gpu_memory_bytes) {
    const double memory = *view.gpu_memory_bytes / unit;
    add_memory_line(plot, memory, QPen(Qt::gray, 1, Qt::DotLine),
                    QObject::tr("GPU memory %1 %2").arg(memory, 0, 'f', 1).arg(unit_name), Qt::AlignBottom);
    highest = std::max(highest, memory);
  }
  add_plan_marks(plot, view, unit);
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setTickLabelRotation(0);
  plot->xAxis->setRange(0.4, static_cast<double>(view.rows.size()) + 0.6);
  plot->yAxis->setLabel(QObject::tr("memory per GPU (%1)").arg(unit_name));
  plot->yAxis->setRange(0, highest * 1.15);
  plot->legend->setFont(QFont(plot->font().family(), 8));
  place_legend_below(plot, 5);
  plot->replot();
}

}  // namespace shardscope::gui
