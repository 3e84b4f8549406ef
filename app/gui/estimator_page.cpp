#include "app/gui/estimator_page.hpp"

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
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/estimator_chart.hpp"
#include "app/gui/estimator_table_model.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::gui {
namespace {

namespace est = shardscope::estimator;

QSpinBox* spin(int min, int max, int value, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(min, max);
  box->setValue(value);
  box->setToolTip(tooltip);
  box->setAccelerated(true);
  return box;
}

QDoubleSpinBox* gib_spin(double max, double value, const QString& tooltip) {
  auto* box = new QDoubleSpinBox;
  box->setRange(0, max);
  box->setDecimals(1);
  box->setSuffix(" GiB");
  box->setValue(value);
  box->setToolTip(tooltip);
  return box;
}

double parse_count_field(const QLineEdit* field, const std::string& what) {
  const std::string text = field->text().trimmed().toStdString();
  return text.empty() ? 0 : est::parse_count(text, what);
}

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
  scroll->setWidget(buildInputs());
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(320);
  splitter->addWidget(scroll);
  splitter->addWidget(buildResults());
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  scheduleEstimate();
}

EstimatorPage::~EstimatorPage() { watcher_->waitForFinished(); }

QLineEdit* EstimatorPage::pathField(const QString& tooltip, const QString& filter, QWidget** row) {
  auto* field = new QLineEdit;
  field->setToolTip(tooltip);
  field->setPlaceholderText(tr("drop a file here or browse"));
  field->setClearButtonEnabled(true);
  auto* browse = new QPushButton(tr("Browse\u2026"));
  connect(browse, &QPushButton::clicked, this, [this, field, filter] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Choose a file"), field->text(), filter);
    if (!path.isEmpty()) field->setText(path);
  });
  connect(field, &QLineEdit::textChanged, this, &EstimatorPage::scheduleEstimate);
  *row = new QWidget;
  auto* layout = new QHBoxLayout(*row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  layout->addWidget(browse);
  return field;
}

QWidget* EstimatorPage::buildShapeInputs() {
  // Transformer shape (defaults: Llama-2-7B).
  auto* shape_page = new QWidget;
  auto* shape_form = new QFormLayout(shape_page);
  layout_ = new QComboBox;
  layout_->addItems({"llama", "gpt2", "gpt_neox"});
  layout_->setToolTip(tr("Parameter layout of the decoder family (--layout)"));
  layers_ = spin(1, 1000, 32, tr("Decoder layers (--layers)"));
  hidden_ = spin(1, 1 << 20, 4096, tr("Hidden size (--hidden)"));
  heads_ = spin(1, 4096, 32, tr("Attention heads (--heads)"));
  kv_heads_ = spin(0, 4096, 0, tr("Key/value heads, 0 = heads (--kv-heads)"));
  ffn_ = spin(0, 1 << 22, 11008, tr("MLP inner size, 0 = 4 x hidden (--ffn)"));
  vocab_ = spin(1, 1 << 24, 32000, tr("Vocabulary size (--vocab)"));
  shape_form->addRow(tr("Layout"), layout_);
  for (auto [label, box] : {std::pair{tr("Layers"), layers_}, {tr("Hidden"), hidden_}, {tr("Heads"), heads_},
                            {tr("KV heads"), kv_heads_}, {tr("FFN"), ffn_}, {tr("Vocabulary"), vocab_}}) {
    shape_form->addRow(label, box);
    connect(box, &QSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  }
  connect(layout_, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  return shape_page;
}

QWidget* EstimatorPage::buildModelInputs() {
  auto* group = new QGroupBox(tr("Model"));
  auto* form = new QFormLayout(group);
  model_kind_ = new QComboBox;
  model_kind_->addItems({tr("Parameter count"), tr("Transformer shape"), tr("Hugging Face config.json"),
                         tr("safetensors checkpoint")});
  model_kind_->setToolTip(tr("How the model is given: --params, --layers/--hidden/..., --hf-config or --safetensors"));
  form->addRow(tr("Model from"), model_kind_);
  model_stack_ = new QStackedWidget;
  // Parameter count.
  auto* count_page = new QWidget;
  auto* count_form = new QFormLayout(count_page);
  params_ = new QLineEdit("7B");
  params_->setToolTip(tr("Total parameters, e.g. 7B, 6.7e9, 125M (--params)"));
  largest_layer_ = new QLineEdit;
  largest_layer_->setPlaceholderText(tr("unknown"));
  largest_layer_->setToolTip(tr("Parameters of the largest layer, gathered whole by ZeRO-3 (--largest-layer)"));
  count_form->addRow(tr("Parameters"), params_);
  count_form->addRow(tr("Largest layer"), largest_layer_);
  for (auto* f : {params_, largest_layer_}) connect(f, &QLineEdit::textChanged, this, &EstimatorPage::scheduleEstimate);
  model_stack_->addWidget(count_page);
  model_stack_->addWidget(buildShapeInputs());
  // Hugging Face config.json.
  QWidget* row = nullptr;
  hf_config_ = pathField(tr("A Hugging Face config.json (--hf-config)"), tr("config.json (*.json)"), &row);
  model_stack_->addWidget(row);
  // safetensors, optionally with the config.json that gives the shape.
  auto* st_page = new QWidget;
  auto* st_form = new QFormLayout(st_page);
  safetensors_ = pathField(tr("A .safetensors file or model.safetensors.index.json; only the header is read (--safetensors)"),
                           tr("safetensors (*.safetensors *.json)"), &row);
  st_form->addRow(tr("Checkpoint"), row);
  safetensors_config_ = pathField(tr("Optional config.json for the shape activations need (--hf-config)"),
                                  tr("config.json (*.json)"), &row);
  st_form->addRow(tr("config.json"), row);
  model_stack_->addWidget(st_page);
  form->addRow(model_stack_);
  connect(model_kind_, &QComboBox::currentIndexChanged, model_stack_, [this](int index) {
    // Only the shown page takes space: a one-line page must not keep the shape page's height.
    for (int i = 0; i < model_stack_->count(); ++i)
      model_stack_->widget(i)->setSizePolicy(QSizePolicy::Preferred, i == index ? QSizePolicy::Preferred : QSizePolicy::Ignored);
    model_stack_->setCurrentIndex(index);
    model_stack_->adjustSize();
  });
  for (int i = 1; i < model_stack_->count(); ++i)
    model_stack_->widget(i)->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
  connect(model_kind_, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  return group;
}

QWidget* EstimatorPage::buildInputs() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->addWidget(buildModelInputs());
  auto* cluster = new QGroupBox(tr("Cluster"));
  auto* form = new QFormLayout(cluster);
  gpus_per_node_ = spin(1, 64, 8, tr("GPUs per node (--gpus-per-node)"));
  nodes_ = spin(1, 4096, 1, tr("Nodes (--nodes); ZeRO shards over GPUs per node x nodes"));
  gpu_ = new QComboBox;
  gpu_->setToolTip(tr("A known GPU (--gpu, memory as nvidia-smi reports it) or a custom memory size (--gpu-mem)"));
  gpu_->addItem(tr("Custom memory"), QString());
  for (const auto& spec : est::gpu_catalog())
    gpu_->addItem(QString("%1 (%2)").arg(QString::fromStdString(spec.name), QString::fromStdString(spec.marketing_size)),
                  QString::fromStdString(spec.name));
  gpu_->setCurrentIndex(std::max(0, gpu_->findData(QString("H100-80GB"))));
  gpu_memory_ = gib_spin(4096, 80, tr("Memory per GPU when the GPU is custom (--gpu-mem); 0 = do not judge fit"));
  cpu_memory_ = gib_spin(1 << 20, 0, tr("Host memory per node (--cpu-mem); 0 = unknown"));
  cpu_memory_->setSpecialValueText(tr("unknown"));
  form->addRow(tr("GPUs per node"), gpus_per_node_);
  form->addRow(tr("Nodes"), nodes_);
  form->addRow(tr("GPU"), gpu_);
  form->addRow(tr("GPU memory"), gpu_memory_);
  form->addRow(tr("CPU memory / node"), cpu_memory_);
  layout->addWidget(cluster);
  auto* workload = new QGroupBox(tr("Workload"));
  auto* wform = new QFormLayout(workload);
  micro_batch_ = spin(1, 1 << 16, 1, tr("Micro-batch per GPU (train_micro_batch_size_per_gpu, --micro-batch)"));
  seq_len_ = spin(0, 1 << 22, 2048, tr("Sequence length (--seq-len); 0 = the model's maximum"));
  seq_len_->setSpecialValueText(tr("model's maximum"));
  wform->addRow(tr("Micro-batch"), micro_batch_);
  wform->addRow(tr("Sequence length"), seq_len_);
  QWidget* row = nullptr;
  deepspeed_config_ = pathField(tr("A DeepSpeed config: zero_optimization.stage, offload devices, bf16/fp16, "
                                   "optimizer and buckets are taken from it (--config)"),
                                tr("DeepSpeed config (*.json)"), &row);
  wform->addRow(tr("DeepSpeed config"), row);
  layout->addWidget(workload);
  layout->addStretch(1);
  for (auto* box : {gpus_per_node_, nodes_, micro_batch_, seq_len_})
    connect(box, &QSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  for (auto* box : {gpu_memory_, cpu_memory_})
    connect(box, &QDoubleSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this] {
    const QString name = gpu_->currentData().toString();
    gpu_memory_->setEnabled(name.isEmpty());
    // A catalog GPU shows its memory (greyed out); switching to custom starts from that value.
    if (auto spec = est::find_gpu(name.toStdString()); spec && !name.isEmpty()) gpu_memory_->setValue(spec->memory_bytes / est::kGiB);
    scheduleEstimate();
  });
  gpu_memory_->setEnabled(gpu_->currentData().toString().isEmpty());
  if (auto spec = est::find_gpu(gpu_->currentData().toString().toStdString())) gpu_memory_->setValue(spec->memory_bytes / est::kGiB);
  return panel;
}

QWidget* EstimatorPage::buildResults() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  recommendation_ = new QLabel;
  recommendation_->setWordWrap(true);
  recommendation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  recommendation_->setFrameShape(QFrame::StyledPanel);
  table_ = new QTableView;
  table_->setModel(table_model_);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  plot_ = new QCustomPlot;
  plot_->setMinimumHeight(240);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(plot_);
  cli_command_ = new QLabel;
  cli_command_->setWordWrap(true);
  cli_command_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_command_->setToolTip(tr("The same estimate from the command line"));
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
  layout->addWidget(splitter, 1);
  layout->addWidget(cli_command_);
  layout->addLayout(buttons);
  return panel;
}

void EstimatorPage::setInputs(const EstimatorInputs& in) {
  model_kind_->setCurrentIndex(static_cast<int>(in.model_kind));
  params_->setText(QString::number(in.params, 'g', 12));
  largest_layer_->setText(in.largest_layer > 0 ? QString::number(in.largest_layer, 'g', 12) : QString());
  layout_->setCurrentText(est::layout_name(in.shape.layout));
  layers_->setValue(static_cast<int>(in.shape.layers));
  hidden_->setValue(static_cast<int>(in.shape.hidden));
  heads_->setValue(static_cast<int>(in.shape.heads));
  kv_heads_->setValue(static_cast<int>(in.shape.kv_heads));
  ffn_->setValue(static_cast<int>(in.shape.ffn));
  vocab_->setValue(static_cast<int>(in.shape.vocab));
  const QString hf = QString::fromStdString(in.hf_config_path);
  hf_config_->setText(in.model_kind == ModelInputKind::kHfConfig ? hf : QString());
  safetensors_config_->setText(in.model_kind == ModelInputKind::kSafetensors ? hf : QString());
  safetensors_->setText(QString::fromStdString(in.safetensors_path));
  gpus_per_node_->setValue(in.gpus_per_node);
  nodes_->setValue(in.nodes);
  gpu_memory_->setValue(in.custom_gpu_memory_bytes / est::kGiB);
  const int gpu_index = gpu_->findData(QString::fromStdString(in.gpu_name));
  gpu_->setCurrentIndex(std::max(0, gpu_index));
  if (auto spec = est::find_gpu(in.gpu_name); spec && !in.gpu_name.empty()) gpu_memory_->setValue(spec->memory_bytes / est::kGiB);
  cpu_memory_->setValue(in.cpu_memory_bytes / est::kGiB);
  micro_batch_->setValue(static_cast<int>(in.micro_batch));
  seq_len_->setValue(static_cast<int>(in.seq_len));
  deepspeed_config_->setText(QString::fromStdString(in.deepspeed_config_path));
  scheduleEstimate();
}

EstimatorInputs EstimatorPage::inputs() const {
  EstimatorInputs in;
  in.model_kind = static_cast<ModelInputKind>(model_kind_->currentIndex());
  if (in.model_kind == ModelInputKind::kParamCount) {
    in.params = parse_count_field(params_, "Parameters");
    in.largest_layer = parse_count_field(largest_layer_, "Largest layer");
  }
  in.shape = est::default_shape(est::parse_layout(layout_->currentText().toStdString(), "Layout"));
  in.shape.layers = layers_->value();
  in.shape.hidden = hidden_->value();
  in.shape.heads = heads_->value();
  in.shape.kv_heads = kv_heads_->value();
  in.shape.ffn = ffn_->value();
  in.shape.vocab = vocab_->value();
  in.hf_config_path = (in.model_kind == ModelInputKind::kSafetensors ? safetensors_config_ : hf_config_)
                          ->text().trimmed().toStdString();
  in.safetensors_path = safetensors_->text().trimmed().toStdString();
  in.gpus_per_node = gpus_per_node_->value();
  in.nodes = nodes_->value();
  in.gpu_name = gpu_->currentData().toString().toStdString();
  in.custom_gpu_memory_bytes = gpu_memory_->value() * est::kGiB;
  in.cpu_memory_bytes = cpu_memory_->value() * est::kGiB;
  in.micro_batch = micro_batch_->value();
  in.seq_len = seq_len_->value();
  in.deepspeed_config_path = deepspeed_config_->text().trimmed().toStdString();
  return in;
}

void EstimatorPage::scheduleEstimate() { debounce_->start(); }

void EstimatorPage::startEstimate() {
  // One computation at a time: a change while one runs is picked up when it finishes.
  if (watcher_->isRunning()) {
    pending_ = true;
    return;
  }
  EstimatorInputs in;
  try {
    in = inputs();
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
  table_model_->setRows(view_.rows);
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
    emit statusMessage(tr("Estimated %1 plans").arg(view_.rows.size()));
  }
  emit estimateUpdated();
}

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
  const bool ok = plot_->savePng(path, 0, 0, 2.0);  // 2x: sharp on high-DPI screens and in documents
  emit statusMessage(ok ? tr("Wrote %1").arg(path) : tr("Could not write %1").arg(path));
}

bool EstimatorPage::loadFile(const QString& path) {
  const QFileInfo info(path);
  if (path.endsWith(".safetensors") || path.endsWith(".safetensors.index.json")) {
    model_kind_->setCurrentIndex(static_cast<int>(ModelInputKind::kSafetensors));
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
    model_kind_->setCurrentIndex(static_cast<int>(ModelInputKind::kHfConfig));
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
