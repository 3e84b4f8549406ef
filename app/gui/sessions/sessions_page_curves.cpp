// The Sessions & Compare page's curves: the smoothing and scale options, the grid of charts, and
// drawing a comparison's curves on them (smoothed and downsampled on a worker thread).
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/common/chart_tickers.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/sessions/sessions_page.hpp"

namespace shardscope::gui {

QWidget* SessionsPage::buildCurveOptions() {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  QSettings settings;
  smoothing_kind_ = new QComboBox;
  smoothing_kind_->addItem(tr("no smoothing"), int(sessions::SmoothingKind::kNone));
  smoothing_kind_->addItem(tr("EMA (TensorBoard)"), int(sessions::SmoothingKind::kEma));
  smoothing_kind_->addItem(tr("time-weighted EMA (W&B)"), int(sessions::SmoothingKind::kTimeWeightedEma));
  smoothing_kind_->addItem(tr("running average"), int(sessions::SmoothingKind::kRunningAverage));
  smoothing_kind_->setCurrentIndex(settings.value("sessions/smoothingKind", 1).toInt());
  smoothing_weight_ = new QDoubleSpinBox;
  smoothing_weight_->setRange(0, 0.999);
  smoothing_weight_->setDecimals(3);
  smoothing_weight_->setSingleStep(0.05);
  smoothing_weight_->setValue(settings.value("sessions/smoothingWeight", 0.6).toDouble());
  smoothing_weight_->setToolTip(tr("EMA weight, as TensorBoard's smoothing slider"));
  smoothing_window_ = new QSpinBox;
  smoothing_window_->setRange(1, 10000);
  smoothing_window_->setValue(settings.value("sessions/smoothingWindow", 10).toInt());
  smoothing_window_->setToolTip(tr("Points in the running average"));
  log_scale_ = new QCheckBox(tr("log scale"));
  log_scale_->setChecked(settings.value("sessions/logScale", false).toBool());
  show_raw_ = new QCheckBox(tr("raw under smoothed"));
  show_raw_->setChecked(true);
  warmup_ = new QSpinBox;
  warmup_->setRange(0, 1000000);
  warmup_->setToolTip(tr("Warm-up steps left out of the summary's timing and throughput, and, above 0, of the "
                         "Verdict and Trend (0 there: the check's own max(2, 10 %) of each run)"));
  layout->addWidget(new QLabel(tr("Smoothing")));
  layout->addWidget(smoothing_kind_);
  layout->addWidget(new QLabel(tr("weight")));
  layout->addWidget(smoothing_weight_);
  layout->addWidget(new QLabel(tr("window")));
  layout->addWidget(smoothing_window_);
  layout->addWidget(log_scale_);
  layout->addWidget(show_raw_);
  layout->addWidget(new QLabel(tr("warm-up steps")));
  layout->addWidget(warmup_);
  layout->addStretch(1);
  connect(smoothing_kind_, &QComboBox::currentIndexChanged, this, &SessionsPage::replot);
  connect(smoothing_weight_, &QDoubleSpinBox::valueChanged, this, &SessionsPage::replot);
  connect(smoothing_window_, &QSpinBox::valueChanged, this, &SessionsPage::replot);
  connect(log_scale_, &QCheckBox::toggled, this, &SessionsPage::drawCurves);
  connect(show_raw_, &QCheckBox::toggled, this, &SessionsPage::drawCurves);
  connect(warmup_, &QSpinBox::editingFinished, this, [this] {
    if (!comparison_.sessions.empty()) compare(comparison_.sessions);
  });
  return row;
}

QWidget* SessionsPage::buildCurvesTab() {
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  layout->addWidget(buildCurveOptions());
  auto* grid = new QGridLayout;
  grid->setSpacing(2);
  int i = 0;
  for (auto metric : compared_metrics()) {
    const std::string name = sessions::metric_name(metric);
    auto* plot = new QCustomPlot;
    plot->setMinimumSize(140, 110);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->xAxis->setLabel(tr("step"));
    use_step_ticks(plot->xAxis, 5);  // integer steps, as many as the chart's width holds
    plot->yAxis->setLabel(metric_title(name));
    plot->setToolTip(tr("Wheel: zoom, drag: pan, right-click: export PNG or reset"));
    add_plot_export_menu(plot, QString::fromStdString(name), [this](const QString& m) { emit statusMessage(m); });
    grid->addWidget(plot, i / 4, i % 4);
    charts_.emplace_back(name, plot);
    ++i;
  }
  layout->addLayout(grid, 1);
  return tab;
}

sessions::Smoothing SessionsPage::smoothing() const {
  sessions::Smoothing s;
  s.kind = static_cast<sessions::SmoothingKind>(smoothing_kind_->currentData().toInt());
  s.weight = smoothing_weight_->value();
  s.window = smoothing_window_->value();
  return s;
}

void SessionsPage::setSmoothing(const sessions::Smoothing& s) {
  smoothing_weight_->setValue(s.weight);
  smoothing_window_->setValue(s.window);
  smoothing_kind_->setCurrentIndex(smoothing_kind_->findData(int(s.kind)));
  replot();
}

void SessionsPage::setLogScale(bool on) { log_scale_->setChecked(on); }

void SessionsPage::replot() {
  saveSettings();
  if (comparison_.curves.empty()) return;
  // One smoothing pass at a time; a change meanwhile is applied when it finishes.
  if (plot_watcher_->isRunning()) {
    replot_pending_ = true;
    return;
  }
  PlotOptions options;
  options.smoothing = smoothing();
  auto curves = comparison_.curves;
  plot_watcher_->setFuture(QtConcurrent::run([curves, options] { return make_plot_curves(curves, options); }));
}

void SessionsPage::drawCurves() {
  if (sender() == plot_watcher_) {
    plot_curves_ = plot_watcher_->result();
    if (replot_pending_) {
      replot_pending_ = false;
      replot();
    }
  }
  saveSettings();
  CurveStyle style;
  style.log_scale = log_scale_->isChecked();
  style.show_raw = show_raw_->isChecked();
  for (auto& [metric, plot] : charts_)
    for (const auto& curve : plot_curves_)
      if (curve.metric == metric || (metric == "tokens_per_s" && curve.metric == "samples_per_s"))  // throughput_as_samples
      {
        draw_compare_curve(plot, curve, comparison_.sessions, style);
        drawBands(curve, plot);
      }
  emit curvesDrawn();
}

QCustomPlot* SessionsPage::chart(const std::string& metric) const {
  for (const auto& [name, plot] : charts_)
    if (name == metric) return plot;
  return nullptr;
}

void SessionsPage::saveSettings() const {
  QSettings settings;
  settings.setValue("sessions/smoothingKind", smoothing_kind_->currentIndex());
  settings.setValue("sessions/smoothingWeight", smoothing_weight_->value());
  settings.setValue("sessions/smoothingWindow", smoothing_window_->value());
  settings.setValue("sessions/logScale", log_scale_->isChecked());
}

}  // namespace shardscope::gui
