#include "app/gui/estimator/estimator_page.hpp"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/estimator/estimator_chart.hpp"
#include "app/gui/estimator/estimator_table_model.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/common/wheel_guard.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::gui {
namespace {

namespace est = shardscope::estimator;

}  // namespace

EstimatorPage::EstimatorPage(QWidget* parent) : QWidget(parent) {
  setAcceptDrops(true);
  table_model_ = new EstimatorTableModel(this);
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(200);
  connect(debounce_, &QTimer::timeout, this, &EstimatorPage::startEstimate);
  watcher_ = new QFutureWatcher<EstimatorView>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &EstimatorPage::onEstimateFinished);

  auto* splitter = new QSplitter(this);
  auto* scroll = new QScrollArea;
  QWidget* inputs = buildInputs();
  scroll->setWidget(inputs);
  scroll_wheel_past_unfocused_fields(inputs);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Wide enough for the fields (nothing clipped), with room for the vertical scroll bar.
  scroll->setMinimumWidth(inputs->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() +
                          2 * scroll->frameWidth());
  splitter->addWidget(scroll);
  splitter->addWidget(buildResults());
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({scroll->minimumWidth(), 900});  // the results take the rest: twelve columns must show
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  scheduleEstimate();
}

EstimatorPage::~EstimatorPage() { watcher_->waitForFinished(); }

QWidget* EstimatorPage::buildResults() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(4, 4, 2, 4);  // every pixel goes to the twelve columns
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // file paths and notes wrap
  recommendation_ = new QLabel;
  recommendation_->setWordWrap(true);
  recommendation_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  recommendation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  recommendation_->setFrameShape(QFrame::StyledPanel);
  table_ = new QTableView;
  table_->setModel(table_model_);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  // Compact rows: the ten plans show without scrolling above the chart.
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setMinimumHeight(120);
  table_->setWordWrap(false);
  plot_ = new QCustomPlot;
  plot_->setMinimumHeight(200);
  auto* marks = new QLabel(tr("%1 recommended (bold): the lowest plan that fits   %2 requested (italic): the config's "
                              "or --stage's plan   o: offload_optimizer, p: offload_param; sizes per GPU unless /node, "
                              "comm per step")
                               .arg(kRecommendedMark, kRequestedMark));
  marks->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  marks->setWordWrap(true);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(plot_);
  // The table needs its ten rows and the header; the chart takes the rest of the height.
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({table_->verticalHeader()->defaultSectionSize() * 11 + 60, 600});
  cli_command_ = new QLabel;
  cli_command_->setWordWrap(true);
  cli_command_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  cli_command_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_command_->setToolTip(tr("The same estimate from the command line: the flags of the fields not at auto"));
  auto* buttons = new QHBoxLayout;
  const std::pair<QString, void (EstimatorPage::*)()> actions[] = {
      {tr("Copy as text"), &EstimatorPage::copyAsText},
      {tr("Export CSV\u2026"), &EstimatorPage::exportCsv},
      {tr("Export PNG\u2026"), &EstimatorPage::exportPng}};
  for (const auto& [label, slot] : actions) {
    auto* button = new QPushButton(label);
    connect(button, &QPushButton::clicked, this, slot);
    buttons->addWidget(button);
  }
  buttons->addStretch(1);
  layout->addWidget(summary_);
  layout->addWidget(recommendation_);
  layout->addWidget(marks);
  layout->addWidget(splitter, 1);
  layout->addWidget(cli_command_);
  layout->addLayout(buttons);
  return panel;
}

void EstimatorPage::scheduleEstimate() { debounce_->start(); }

void EstimatorPage::startEstimate() {
  // One computation at a time: a change while one runs is picked up when it finishes.
  if (watcher_->isRunning()) {
    pending_ = true;
    return;
  }
  est::EstimateRequest in;
  try {
    in = request();
  } catch (const std::exception& error) {
    view_ = EstimatorView{};
    view_.error = error.what();
    showView();
    return;
  }
  cli_command_->setText(QString::fromStdString(estimator_cli_command(in)));
  watcher_->setFuture(QtConcurrent::run([in] { return compute_estimator_view(in); }));
}

void EstimatorPage::onEstimateFinished() {
  view_ = watcher_->result();
  showView();
  if (pending_) {
    pending_ = false;
    startEstimate();
  }
}

void EstimatorPage::showView() {
  table_model_->setView(view_);
  showEffectiveDefaults();
  draw_estimator_chart(plot_, view_);
  if (!view_.error.empty()) {
    summary_->setText(tr("<b>Cannot estimate:</b> %1").arg(QString::fromStdString(view_.error).toHtmlEscaped()));
    recommendation_->clear();
    emit statusMessage(tr("Estimate: %1").arg(QString::fromStdString(view_.error)));
  } else {
    QString summary = QString::fromStdString(view_.model_summary).toHtmlEscaped();
    for (const auto& note : view_.notes) summary += "<br><i>" + QString::fromStdString(note).toHtmlEscaped() + "</i>";
    summary_->setText(summary);
    recommendation_->setText(QString::fromStdString(view_.recommendation));
    // What `shardscope estimate` would exit 1 for: nothing fits, or the requested plan does not.
    recommendation_->setStyleSheet(view_.failed ? "QLabel { background: #fde2e1; color: #7a0b0b; }" : QString());
    emit statusMessage(tr("Estimated %1 plans").arg(view_.rows.size()));
  }
  emit estimateUpdated();
}

QString EstimatorPage::cliCommand() const { return cli_command_->text(); }

QString EstimatorPage::reportText() const {
  if (!view_.estimate) return QString::fromStdString(view_.error);
  return QString::fromStdString(est::format_estimate_text(*view_.estimate, false));
}

void EstimatorPage::copyAsText() {
  QApplication::clipboard()->setText(reportText());
  emit statusMessage(tr("Estimate copied as text"));
}

void EstimatorPage::exportCsv() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export CSV"), "estimate.csv", tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QSaveFile file(path);  // written to a temporary name, renamed on commit
  const QByteArray csv = QByteArray::fromStdString(estimator_rows_csv(view_));
  if (!file.open(QIODevice::WriteOnly) || file.write(csv) != csv.size() || !file.commit()) {
    emit statusMessage(tr("Could not write %1: %2").arg(path, file.errorString()));
    return;
  }
  emit statusMessage(tr("Wrote %1").arg(path));
}

void EstimatorPage::exportPng() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export PNG"), "estimate.png", tr("PNG (*.png)"));
  if (path.isEmpty()) return;
  const bool ok = save_plot_png(plot_, path);  // 2x, with its legend
  emit statusMessage(ok ? tr("Wrote %1").arg(path) : tr("Could not write %1").arg(path));
}

bool EstimatorPage::loadFile(const QString& path) {
  const QFileInfo info(path);
  if (path.endsWith(".safetensors") || path.endsWith(".safetensors.index.json")) {
    model_kind_->setCurrentIndex(static_cast<int>(est::ModelSource::kSafetensors));
    safetensors_->setText(path);
    return true;
  }
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    emit statusMessage(tr("Cannot read %1").arg(path));
    return false;
  }
  // A Hugging Face config names its model_type; anything else JSON is taken as a DeepSpeed config.
  const QByteArray head = file.read(1 << 20);
  if (head.contains("\"model_type\"")) {
    model_kind_->setCurrentIndex(static_cast<int>(est::ModelSource::kHfConfig));
    hf_config_->setText(path);
  } else {
    deepspeed_config_->setText(path);
  }
  emit statusMessage(tr("Loaded %1").arg(info.fileName()));
  return true;
}

void EstimatorPage::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void EstimatorPage::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) loadFile(url.toLocalFile());
  event->acceptProposedAction();
}

}  // namespace shardscope::gui
