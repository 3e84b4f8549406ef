// EstimatorPage, the fields: one per flag of `shardscope estimate`, in the groups Model, Cluster,
// Training and Advanced. A field at "auto" is a flag not given: it shows the value the estimate
// used (from the DeepSpeed config or EstimateOptions' defaults), never a default of its own.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/common/path_field.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"

namespace shardscope::gui {
namespace {

namespace est = shardscope::estimator;

const QString kAuto = QObject::tr("auto");
const QString kCustomGpu = QStringLiteral("custom");

/// An integer flag: the lowest value (one below `min_valid`) means "not given" and reads "auto".
QSpinBox* optional_spin(int min_valid, int max, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(min_valid - 1, max);
  box->setSpecialValueText(kAuto);
  box->setValue(min_valid - 1);
  box->setToolTip(tooltip);
  box->setAccelerated(true);
  return box;
}

/// A required integer (a shape's layers, hidden, heads, vocabulary).
QSpinBox* required_spin(int max, int value, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(1, max);
  box->setValue(value);
  box->setToolTip(tooltip);
  box->setAccelerated(true);
  return box;
}

/// A real-valued flag shown in `suffix` units; the lowest value means "not given".
QDoubleSpinBox* optional_double(double min_valid, double max, const QString& suffix, const QString& tooltip) {
  auto* box = new QDoubleSpinBox;
  box->setDecimals(1);
  box->setRange(min_valid - 0.1, max);
  box->setSuffix(suffix);
  box->setSpecialValueText(kAuto);
  box->setValue(min_valid - 0.1);
  box->setToolTip(tooltip);
  return box;
}

std::optional<long long> optional_value(const QSpinBox* box) {
  return box->value() == box->minimum() ? std::nullopt : std::optional<long long>(box->value());
}

std::optional<double> optional_value(const QDoubleSpinBox* box, double scale) {
  return box->value() == box->minimum() ? std::nullopt : std::optional<double>(box->value() * scale);
}

void set_optional(QSpinBox* box, const std::optional<long long>& v) {
  box->setValue(v ? static_cast<int>(*v) : box->minimum());
}

void set_optional(QDoubleSpinBox* box, const std::optional<double>& v, double scale) {
  box->setValue(v ? *v / scale : box->minimum());
}

/// A choice flag: item 0 is "auto" (not given), then the values.
/// A combo box as wide as about 14 characters, whatever its longest item (GPU names, "auto: ..."),
/// so the inputs column stays narrow and the results get the width.
QComboBox* narrow_combo() {
  auto* box = new QComboBox;
  box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  box->setMinimumContentsLength(14);
  return box;
}

QComboBox* choice_box(const QStringList& choices, const QString& tooltip, bool editable = false) {
  QComboBox* box = narrow_combo();
  box->addItem(kAuto);
  box->addItems(choices);
  box->setEditable(editable);
  box->setToolTip(tooltip);
  return box;
}

std::optional<std::string> choice(const QComboBox* box) {
  if (box->currentIndex() == 0 && box->currentText() == box->itemText(0)) return std::nullopt;
  const QString text = box->currentText().trimmed();
  return text.isEmpty() ? std::nullopt : std::optional<std::string>(text.toStdString());
}

void set_choice(QComboBox* box, const std::optional<std::string>& v) {
  if (!v) return box->setCurrentIndex(0);
  const int index = box->findText(QString::fromStdString(*v));
  if (index > 0) box->setCurrentIndex(index);
  else if (box->isEditable()) box->setCurrentText(QString::fromStdString(*v));
}

std::optional<double> count_field(const QLineEdit* field, const std::string& flag) {
  const std::string text = field->text().trimmed().toStdString();
  return text.empty() ? std::nullopt : std::optional<double>(est::parse_count(text, flag));
}

QString count_text(const std::optional<double>& v) { return v ? QString::number(*v, 'g', 12) : QString(); }

/// A titled group box with a form inside, `*group` to add to the inputs column.
QFormLayout* group_form(const QString& title, QWidget** group) {
  auto* box = new QGroupBox(title);
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  *group = box;
  return form;
}

}  // namespace

QLineEdit* EstimatorPage::pathField(const QString& tooltip, const QString& filter, QWidget** row) {
  QLineEdit* field = make_path_field(this, PathKind::kOpenFile, tooltip, filter, row);
  field->setPlaceholderText(tr("drop a file here or browse"));
  connect(field, &QLineEdit::textChanged, this, &EstimatorPage::scheduleEstimate);
  return field;
}

QWidget* EstimatorPage::buildShapeInputs() {
  // Transformer shape (prefilled with Llama-2-7B; every value here is a flag on the command line).
  auto* page = new QWidget;
  auto* form = new QFormLayout(page);
  form->setContentsMargins(0, 0, 0, 0);
  layout_ = narrow_combo();
  layout_->addItems({"llama", "gpt2", "gpt_neox"});
  layout_->setToolTip(tr("Parameter layout of the decoder family (--layout)"));
  layers_ = required_spin(1000, 32, tr("Decoder layers (--layers)"));
  hidden_ = required_spin(1 << 20, 4096, tr("Hidden size (--hidden)"));
  heads_ = required_spin(4096, 32, tr("Attention heads (--heads)"));
  kv_heads_ = optional_spin(1, 4096, tr("Key/value heads (--kv-heads); auto = heads"));
  head_dim_ = optional_spin(1, 1 << 16, tr("Head dimension (--head-dim); auto = hidden / heads"));
  ffn_ = optional_spin(1, 1 << 22, tr("MLP inner size (--ffn); auto = 4 x hidden"));
  ffn_->setValue(11008);
  vocab_ = required_spin(1 << 24, 32000, tr("Vocabulary size (--vocab)"));
  tied_ = choice_box({"yes", "no"}, tr("LM head shares the token embedding (--tied-embeddings); auto = the layout's"));
  form->addRow(tr("Layout"), layout_);
  for (auto [label, box] : {std::pair{tr("Layers"), layers_}, {tr("Hidden"), hidden_}, {tr("Heads"), heads_},
                            {tr("KV heads"), kv_heads_}, {tr("Head dim"), head_dim_}, {tr("FFN"), ffn_},
                            {tr("Vocabulary"), vocab_}}) {
    form->addRow(label, box);
    connect(box, &QSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  }
  form->addRow(tr("Tied embeddings"), tied_);
  for (auto* box : {layout_, tied_}) connect(box, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  return page;
}

QWidget* EstimatorPage::buildModelInputs() {
  auto* group = new QGroupBox(tr("Model"));
  auto* form = new QFormLayout(group);
  model_kind_ = narrow_combo();
  model_kind_->addItems({tr("Parameter count"), tr("Transformer shape"), tr("Hugging Face config.json"),
                         tr("safetensors checkpoint")});
  model_kind_->setToolTip(tr("How the model is given: --params, --layers/--hidden/..., --hf-config or --safetensors"));
  form->addRow(tr("Model from"), model_kind_);
  model_stack_ = new QStackedWidget;
  auto* count_page = new QWidget;
  auto* count_form = new QFormLayout(count_page);
  count_form->setContentsMargins(0, 0, 0, 0);
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
  auto* hf_page = new QWidget;
  auto* hf_form = new QFormLayout(hf_page);
  hf_form->setContentsMargins(0, 0, 0, 0);
  QWidget* row = nullptr;
  hf_config_ = pathField(tr("A Hugging Face config.json (--hf-config)"), tr("config.json (*.json)"), &row);
  hf_layout_ = choice_box({"llama", "gpt2", "gpt_neox"},
                          tr("Read another model_type with this layout's keys (--hf-layout); auto = by model_type"));
  connect(hf_layout_, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  hf_form->addRow(tr("config.json"), row);
  hf_form->addRow(tr("Layout"), hf_layout_);
  model_stack_->addWidget(hf_page);
  auto* st_page = new QWidget;
  auto* st_form = new QFormLayout(st_page);
  st_form->setContentsMargins(0, 0, 0, 0);
  safetensors_ = pathField(tr("A .safetensors file or model.safetensors.index.json; only the header is read (--safetensors)"),
                           tr("safetensors (*.safetensors *.json)"), &row);
  st_form->addRow(tr("Checkpoint"), row);
  safetensors_config_ = pathField(tr("Optional config.json for the shape activations need (--hf-config)"),
                                  tr("config.json (*.json)"), &row);
  st_form->addRow(tr("config.json"), row);
  model_stack_->addWidget(st_page);
  form->addRow(model_stack_);
  auto show_only = [this](int index) {
    // Only the shown page takes space: a one-line page must not keep the shape page's height.
    for (int i = 0; i < model_stack_->count(); ++i)
      model_stack_->widget(i)->setSizePolicy(QSizePolicy::Preferred, i == index ? QSizePolicy::Preferred : QSizePolicy::Ignored);
    model_stack_->setCurrentIndex(index);
    model_stack_->adjustSize();
  };
  connect(model_kind_, &QComboBox::currentIndexChanged, model_stack_, show_only);
  show_only(0);
  connect(model_kind_, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  return group;
}

QWidget* EstimatorPage::buildClusterInputs() {
  QWidget* panel = nullptr;
  QFormLayout* form = group_form(tr("Cluster"), &panel);
  gpus_per_node_ = optional_spin(1, 64, tr("GPUs per node (--gpus-per-node)"));
  nodes_ = optional_spin(1, 4096, tr("Nodes (--nodes); ZeRO shards over GPUs per node x nodes"));
  gpu_ = narrow_combo();
  gpu_->setToolTip(tr("A known GPU (--gpu, memory as nvidia-smi reports it) or a custom memory size (--gpu-mem); "
                      "none: fit is not judged"));
  gpu_->addItem(tr("none (fit not judged)"), QString());
  for (const auto& spec : est::gpu_catalog())
    gpu_->addItem(QString("%1 (%2)").arg(QString::fromStdString(spec.name), QString::fromStdString(spec.marketing_size)),
                  QString::fromStdString(spec.name));
  gpu_->addItem(tr("custom memory"), kCustomGpu);
  gpu_memory_ = optional_double(0.1, 4096, " GiB", tr("Memory per GPU (--gpu-mem), with a custom GPU"));
  cpu_memory_ = optional_double(0.1, 1 << 20, " GiB", tr("Host memory per node (--cpu-mem); auto = unknown, not judged"));
  margin_ = optional_double(0, 99, " %", tr("Memory kept free on GPU and host (--margin)"));
  bandwidth_ = optional_double(0.1, 1e5, " GB/s", tr("Per-GPU link bandwidth within a node (--bandwidth); auto = the GPU's link"));
  inter_node_bandwidth_ = optional_double(0.1, 1e5, " GB/s", tr("Per-GPU bandwidth across nodes (--inter-node-bandwidth)"));
  form->addRow(tr("GPUs per node"), gpus_per_node_);
  form->addRow(tr("Nodes"), nodes_);
  form->addRow(tr("GPU"), gpu_);
  form->addRow(tr("GPU memory"), gpu_memory_);
  form->addRow(tr("CPU memory / node"), cpu_memory_);
  form->addRow(tr("Margin"), margin_);
  form->addRow(tr("Link bandwidth"), bandwidth_);
  form->addRow(tr("Inter-node bandwidth"), inter_node_bandwidth_);
  for (auto* box : {gpus_per_node_, nodes_}) connect(box, &QSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  for (auto* box : {gpu_memory_, cpu_memory_, margin_, bandwidth_, inter_node_bandwidth_})
    connect(box, &QDoubleSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this] {
    const QString name = gpu_->currentData().toString();
    gpu_memory_->setEnabled(name == kCustomGpu);
    // A catalog GPU shows its memory (greyed out); switching to custom starts from that value.
    if (auto spec = est::find_gpu(name.toStdString()); spec && !name.isEmpty())
      gpu_memory_->setValue(spec->memory_bytes / est::kGiB);
    scheduleEstimate();
  });
  gpu_memory_->setEnabled(false);
  return panel;
}

QWidget* EstimatorPage::buildTrainingInputs() {
  QWidget* panel = nullptr;
  QFormLayout* form = group_form(tr("Training"), &panel);
  QWidget* row = nullptr;
  deepspeed_config_ = pathField(tr("A DeepSpeed config (--config): its stage, offload, precision, optimizer, micro-batch, "
                                   "accumulation and buckets apply; the fields below override it"),
                                tr("DeepSpeed config (*.json *.jsonc *.hjson);;All files (*)"), &row);
  stage_ = choice_box({"0", "1", "2", "3"}, tr("The ZeRO stage you plan to run, judged in the verdict (--stage)"));
  offload_optimizer_ = choice_box({"none", "cpu", "nvme"}, tr("--offload-optimizer (with a stage)"));
  offload_param_ = choice_box({"none", "cpu", "nvme"}, tr("--offload-param (stage 3)"));
  precision_ = choice_box({"bf16", "fp16", "fp32"}, tr("Training precision (--precision)"));
  optimizer_ = choice_box({"adamw", "adam", "lamb", "sgd", "adagrad", "lion"}, tr("Optimizer (--optimizer)"), true);
  low_precision_master_ = new QCheckBox(tr("16-bit master weights and grads"));
  low_precision_master_->setToolTip(tr("bf16/fp16_master_weights_and_grads (--low-precision-master)"));
  low_precision_states_ = new QCheckBox(tr("16-bit optimizer states"));
  low_precision_states_->setToolTip(tr("bf16_optimizer_states (--low-precision-optimizer-states)"));
  micro_batch_ = optional_spin(1, 1 << 16, tr("Micro-batch per GPU (--micro-batch)"));
  seq_len_ = optional_spin(1, 1 << 22, tr("Sequence length (--seq-len); auto = the model's maximum"));
  grad_accum_ = optional_spin(1, 1 << 16, tr("Gradient accumulation steps (--grad-accum)"));
  checkpointing_ = choice_box({"none", "selective", "full"}, tr("Activation checkpointing (--checkpointing)"));
  // Fused attention is the default (the engine's and current Hugging Face models'); the box asks
  // for eager attention's kept scores.
  materialized_scores_ = new QCheckBox(tr("eager attention scores"));
  materialized_scores_->setToolTip(tr("Count the s x s score matrices eager attention keeps (--attention materialized); "
                                  "unchecked: scaled_dot_product_attention's fused kernels"));
  form->addRow(tr("DeepSpeed config"), row);
  form->addRow(tr("Planned stage"), stage_);
  form->addRow(tr("Offload optimizer"), offload_optimizer_);
  form->addRow(tr("Offload params"), offload_param_);
  form->addRow(tr("Precision"), precision_);
  form->addRow(tr("Optimizer"), optimizer_);
  form->addRow(low_precision_master_);
  form->addRow(low_precision_states_);
  form->addRow(tr("Micro-batch"), micro_batch_);
  form->addRow(tr("Sequence length"), seq_len_);
  form->addRow(tr("Accumulation"), grad_accum_);
  form->addRow(tr("Checkpointing"), checkpointing_);
  form->addRow(materialized_scores_);
  for (auto* box : {micro_batch_, seq_len_, grad_accum_}) connect(box, &QSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  for (auto* box : {stage_, offload_optimizer_, offload_param_, precision_, checkpointing_})
    connect(box, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  connect(optimizer_, &QComboBox::currentTextChanged, this, &EstimatorPage::scheduleEstimate);
  for (auto* box : {low_precision_master_, low_precision_states_, materialized_scores_})
    connect(box, &QCheckBox::toggled, this, &EstimatorPage::scheduleEstimate);
  return panel;
}

QWidget* EstimatorPage::buildAdvancedInputs() {
  QWidget* panel = nullptr;
  QFormLayout* form = group_form(tr("Buckets and output"), &panel);
  const std::pair<QLineEdit**, const char*> buckets[] = {{&reduce_bucket_, "--reduce-bucket-size (elements)"},
                                                          {&allgather_bucket_, "--allgather-bucket-size (elements)"},
                                                          {&prefetch_bucket_, "--prefetch-bucket-size (stage 3 elements)"},
                                                          {&max_live_, "--max-live-parameters (stage 3 elements)"}};
  const QString labels[] = {tr("Reduce bucket"), tr("All-gather bucket"), tr("Prefetch bucket"), tr("Max live params")};
  for (std::size_t i = 0; i < std::size(buckets); ++i) {
    *buckets[i].first = new QLineEdit;
    (*buckets[i].first)->setToolTip(tr(buckets[i].second));
    form->addRow(labels[i], *buckets[i].first);
    connect(*buckets[i].first, &QLineEdit::textChanged, this, &EstimatorPage::scheduleEstimate);
  }
  buffer_factor_ = optional_double(0.1, 100, "", tr("DeepSpeed estimators' additional_buffer_factor (--buffer-factor)"));
  buffer_factor_->setDecimals(2);
  units_ = choice_box({"GiB", "GB"}, tr("Units of the sizes (--units): GiB = 2^30 bytes, GB = 1e9 bytes"));
  form->addRow(tr("Buffer factor"), buffer_factor_);
  form->addRow(tr("Units"), units_);
  connect(buffer_factor_, &QDoubleSpinBox::valueChanged, this, &EstimatorPage::scheduleEstimate);
  connect(units_, &QComboBox::currentIndexChanged, this, &EstimatorPage::scheduleEstimate);
  return panel;
}

QWidget* EstimatorPage::buildInputs() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->addWidget(buildModelInputs());
  layout->addWidget(buildClusterInputs());
  layout->addWidget(buildTrainingInputs());
  layout->addWidget(buildAdvancedInputs());
  layout->addStretch(1);
  showEffectiveDefaults();
  return panel;
}

void EstimatorPage::readModelFields(est::EstimateRequest& r) const {
  r.source = static_cast<est::ModelSource>(model_kind_->currentIndex());
  switch (r.source) {
    case est::ModelSource::kParamCount:
      r.params = count_field(params_, "--params");
      r.largest_layer = count_field(largest_layer_, "--largest-layer");
      break;
    case est::ModelSource::kShape:
      r.layout = est::parse_layout(layout_->currentText().toStdString(), "--layout");
      r.layers = layers_->value();
      r.hidden = hidden_->value();
      r.heads = heads_->value();
      r.vocab = vocab_->value();
      r.kv_heads = optional_value(kv_heads_);
      r.head_dim = optional_value(head_dim_);
      r.ffn = optional_value(ffn_);
      if (auto tied = choice(tied_)) r.tied_embeddings = *tied == "yes";
      break;
    case est::ModelSource::kHfConfig:
      r.hf_config = hf_config_->text().trimmed().toStdString();
      if (auto layout = choice(hf_layout_)) r.hf_layout = est::parse_layout(*layout, "--hf-layout");
      break;
    case est::ModelSource::kSafetensors:
      r.safetensors = safetensors_->text().trimmed().toStdString();
      r.hf_config = safetensors_config_->text().trimmed().toStdString();
      break;
  }
}

void EstimatorPage::readOtherFields(est::EstimateRequest& r) const {
  r.gpus_per_node = optional_value(gpus_per_node_);
  r.nodes = optional_value(nodes_);
  const QString gpu = gpu_->currentData().toString();
  if (gpu == kCustomGpu) r.gpu_memory_bytes = optional_value(gpu_memory_, est::kGiB);
  else r.gpu = gpu.toStdString();
  r.cpu_memory_bytes = optional_value(cpu_memory_, est::kGiB);
  r.margin = optional_value(margin_, 0.01);
  r.bandwidth = optional_value(bandwidth_, est::kGB);
  r.inter_node_bandwidth = optional_value(inter_node_bandwidth_, est::kGB);
  r.config = deepspeed_config_->text().trimmed().toStdString();
  if (auto stage = choice(stage_)) r.stage = std::stoi(*stage);
  if (auto d = choice(offload_optimizer_)) r.offload_optimizer = est::parse_offload(*d, "--offload-optimizer");
  if (auto d = choice(offload_param_)) r.offload_param = est::parse_offload(*d, "--offload-param");
  if (auto p = choice(precision_)) r.precision = est::parse_precision(*p, "--precision");
  r.optimizer = choice(optimizer_);
  r.low_precision_master = low_precision_master_->isChecked();
  r.low_precision_optimizer_states = low_precision_states_->isChecked();
  r.micro_batch = optional_value(micro_batch_);
  r.seq_len = optional_value(seq_len_);
  r.grad_accum = optional_value(grad_accum_);
  if (auto c = choice(checkpointing_)) r.checkpointing = est::parse_checkpointing(*c, "--checkpointing");
  if (materialized_scores_->isChecked()) r.attention = est::AttentionKernel::kMaterialized;
  r.reduce_bucket_size = count_field(reduce_bucket_, "--reduce-bucket-size");
  r.allgather_bucket_size = count_field(allgather_bucket_, "--allgather-bucket-size");
  r.prefetch_bucket_size = count_field(prefetch_bucket_, "--prefetch-bucket-size");
  r.max_live_parameters = count_field(max_live_, "--max-live-parameters");
  r.buffer_factor = optional_value(buffer_factor_, 1.0);
  if (auto u = choice(units_)) r.units = *u == "GB" ? est::ByteUnit::kGB : est::ByteUnit::kGiB;
}

est::EstimateRequest EstimatorPage::request() const {
  est::EstimateRequest r;
  readModelFields(r);
  readOtherFields(r);
  return r;
}

void EstimatorPage::setRequest(const est::EstimateRequest& r) {
  model_kind_->setCurrentIndex(static_cast<int>(r.source));
  params_->setText(count_text(r.params));
  largest_layer_->setText(count_text(r.largest_layer));
  if (r.layout) layout_->setCurrentText(est::layout_name(*r.layout));
  for (auto [box, value] : {std::pair{layers_, r.layers}, {hidden_, r.hidden}, {heads_, r.heads}, {vocab_, r.vocab}})
    if (value) box->setValue(static_cast<int>(*value));
  set_optional(kv_heads_, r.kv_heads);
  set_optional(head_dim_, r.head_dim);
  set_optional(ffn_, r.ffn);
  set_choice(tied_, r.tied_embeddings ? std::optional<std::string>(*r.tied_embeddings ? "yes" : "no") : std::nullopt);
  const QString hf = QString::fromStdString(r.hf_config);
  hf_config_->setText(r.source == est::ModelSource::kHfConfig ? hf : QString());
  safetensors_config_->setText(r.source == est::ModelSource::kSafetensors ? hf : QString());
  safetensors_->setText(QString::fromStdString(r.safetensors));
  set_choice(hf_layout_, r.hf_layout ? std::optional<std::string>(est::layout_name(*r.hf_layout)) : std::nullopt);
  set_optional(gpus_per_node_, r.gpus_per_node);
  set_optional(nodes_, r.nodes);
  gpu_->setCurrentIndex(std::max(0, gpu_->findData(r.gpu_memory_bytes ? kCustomGpu : QString::fromStdString(r.gpu))));
  if (r.gpu_memory_bytes) set_optional(gpu_memory_, r.gpu_memory_bytes, est::kGiB);
  set_optional(cpu_memory_, r.cpu_memory_bytes, est::kGiB);
  set_optional(margin_, r.margin, 0.01);
  set_optional(bandwidth_, r.bandwidth, est::kGB);
  set_optional(inter_node_bandwidth_, r.inter_node_bandwidth, est::kGB);
  deepspeed_config_->setText(QString::fromStdString(r.config));
  set_choice(stage_, r.stage ? std::optional<std::string>(std::to_string(*r.stage)) : std::nullopt);
  set_choice(offload_optimizer_, r.offload_optimizer ? std::optional<std::string>(est::offload_name(*r.offload_optimizer)) : std::nullopt);
  set_choice(offload_param_, r.offload_param ? std::optional<std::string>(est::offload_name(*r.offload_param)) : std::nullopt);
  set_choice(precision_, r.precision ? std::optional<std::string>(est::precision_name(*r.precision)) : std::nullopt);
  set_choice(optimizer_, r.optimizer);
  low_precision_master_->setChecked(r.low_precision_master);
  low_precision_states_->setChecked(r.low_precision_optimizer_states);
  set_optional(micro_batch_, r.micro_batch);
  set_optional(seq_len_, r.seq_len);
  set_optional(grad_accum_, r.grad_accum);
  set_choice(checkpointing_, r.checkpointing ? std::optional<std::string>(est::checkpointing_name(*r.checkpointing)) : std::nullopt);
  materialized_scores_->setChecked(r.attention == est::AttentionKernel::kMaterialized);
  reduce_bucket_->setText(count_text(r.reduce_bucket_size));
  allgather_bucket_->setText(count_text(r.allgather_bucket_size));
  prefetch_bucket_->setText(count_text(r.prefetch_bucket_size));
  max_live_->setText(count_text(r.max_live_parameters));
  set_optional(buffer_factor_, r.buffer_factor, 1.0);
  set_choice(units_, r.units ? std::optional<std::string>(est::unit_name(*r.units)) : std::nullopt);
  scheduleEstimate();
}

void EstimatorPage::showEffectiveDefaults() {
  // "auto" says what the estimate used: the config's value or EstimateOptions' default.
  const est::EstimateOptions o = view_.estimate ? view_.estimate->options : est::EstimateOptions{};
  auto say = [](const QString& value) { return QObject::tr("auto: %1").arg(value); };
  gpus_per_node_->setSpecialValueText(say(QString::number(o.cluster.gpus_per_node)));
  nodes_->setSpecialValueText(say(QString::number(o.cluster.nodes)));
  micro_batch_->setSpecialValueText(say(QString::number(o.workload.micro_batch)));
  grad_accum_->setSpecialValueText(say(QString::number(o.workload.grad_accum)));
  seq_len_->setSpecialValueText(o.workload.seq_len > 0 ? say(QString::number(o.workload.seq_len)) : say(tr("model's max")));
  margin_->setSpecialValueText(say(QString::number(100 * o.cluster.margin) + " %"));
  buffer_factor_->setSpecialValueText(say(QString::number(o.deepspeed_buffer_factor)));
  cpu_memory_->setSpecialValueText(o.cluster.cpu_memory_bytes ? say(QString::number(*o.cluster.cpu_memory_bytes / est::kGiB) + " GiB")
                                                               : say(tr("unknown")));
  bandwidth_->setSpecialValueText(say(o.cluster.intra_node_bandwidth ? QString::number(*o.cluster.intra_node_bandwidth / est::kGB) + " GB/s"
                                                                     : tr("GPU's link")));
  inter_node_bandwidth_->setSpecialValueText(say(o.cluster.inter_node_bandwidth ? QString::number(*o.cluster.inter_node_bandwidth / est::kGB) + " GB/s"
                                                                                : tr("default")));
  const auto plan = o.requested_plan;
  stage_->setItemText(0, say(plan ? QString::number(plan->stage) : tr("none")));
  offload_optimizer_->setItemText(0, say(est::offload_name(plan ? plan->offload_optimizer : est::OffloadDevice::kNone)));
  offload_param_->setItemText(0, say(est::offload_name(plan ? plan->offload_param : est::OffloadDevice::kNone)));
  precision_->setItemText(0, say(est::precision_name(o.precision.precision)));
  optimizer_->setItemText(0, say(QString::fromStdString(o.precision.optimizer)));
  checkpointing_->setItemText(0, say(est::checkpointing_name(o.workload.checkpointing)));
  units_->setItemText(0, say(est::unit_name(o.display_unit)));
  for (auto [field, value] : {std::pair{reduce_bucket_, o.buckets.reduce_bucket_size}, {allgather_bucket_, o.buckets.allgather_bucket_size},
                              {prefetch_bucket_, o.buckets.prefetch_bucket_size}, {max_live_, o.buckets.max_live_parameters}})
    field->setPlaceholderText(say(QString::number(value, 'g', 6)));
}

}  // namespace shardscope::gui
