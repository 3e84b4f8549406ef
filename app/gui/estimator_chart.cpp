#include "app/gui/estimator_chart.hpp"

#include <qcustomplot.h>

#include "app/gui/estimator_model.hpp"
#include "estimator/byte_units.hpp"

namespace shardscope::gui {
namespace {

struct Part {
  const char* name;
  QColor color;
  double EstimatorRow::*field;
};

const Part kParts[] = {
    {"Parameters", QColor(31, 119, 180), &EstimatorRow::gpu_params},
    {"Gradients", QColor(255, 127, 14), &EstimatorRow::gpu_gradients},
    {"Optimizer (master + states)", QColor(44, 160, 44), &EstimatorRow::gpu_optimizer},
    {"Activations", QColor(148, 103, 189), &EstimatorRow::gpu_activations},
    {"Buffers", QColor(140, 86, 75), &EstimatorRow::gpu_buffers},
};

}  // namespace

void draw_estimator_chart(QCustomPlot* plot, const EstimatorView& view) {
  plot->clearPlottables();
  plot->clearItems();
  plot->legend->setVisible(!view.rows.empty());
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  QVector<double> keys;
  double highest = 1;
  for (std::size_t i = 0; i < view.rows.size(); ++i) {
    keys << static_cast<double>(i + 1);
    ticker->addTick(static_cast<double>(i + 1), QString::fromStdString(view.rows[i].short_label));
    highest = std::max(highest, view.rows[i].gpu_total / estimator::kGiB);
  }
  QCPBars* below = nullptr;
  for (const Part& part : kParts) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setName(QObject::tr(part.name));
    bars->setPen(Qt::NoPen);
    bars->setBrush(part.color);
    bars->setWidth(0.6);
    QVector<double> values;
    for (const auto& row : view.rows) values << row.*(part.field) / estimator::kGiB;
    bars->setData(keys, values, true);
    if (below) bars->moveAbove(below);
    below = bars;
  }
  if (view.gpu_memory_bytes) {
    const double gib = *view.gpu_memory_bytes / estimator::kGiB;
    auto* line = new QCPItemStraightLine(plot);
    line->point1->setCoords(0, gib);
    line->point2->setCoords(1, gib);
    line->setPen(QPen(Qt::red, 2, Qt::DashLine));
    auto* label = new QCPItemText(plot);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    label->position->setCoords(0.55, gib);
    label->setText(QObject::tr("GPU memory %1 GiB").arg(gib, 0, 'f', 1));
    label->setColor(Qt::red);
    highest = std::max(highest, gib);
  }
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setTickLabelRotation(35);
  plot->xAxis->setRange(0.3, static_cast<double>(view.rows.size()) + 0.7);
  plot->yAxis->setLabel(QObject::tr("memory per GPU (GiB)"));
  plot->yAxis->setRange(0, highest * 1.12);
  plot->legend->setFont(QFont(plot->font().family(), 8));
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot->replot();
}

}  // namespace shardscope::gui
