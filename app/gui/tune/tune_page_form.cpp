// The Tune page's form: every field is a flag of `shardscope tune` (its tooltip names it), and the
// space the tuner would search for them is shown under the --space rows.
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/gui/common/path_field.hpp"
#include "app/gui/common/wheel_guard.hpp"
#include "app/gui/tune/tune_page.hpp"
#include "app/gui/tune/tune_runner.hpp"

namespace shardscope::gui {
namespace {

QComboBox* choice_box(const QStringList& items, const QString& tooltip) {
  auto* box = new QComboBox;
  box->addItems(items);
  box->setToolTip(tooltip);
  return box;
}

QSpinBox* count_box(int low, int high, const QString& special, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(low, high);
  box->setSpecialValueText(special);
  box->setToolTip(tooltip);
  return box;
}

// "auto (...)" is the flag left out: the combo's first item.
std::string choice_value(const QComboBox* box) {
  return box->currentIndex() == 0 ? std::string() : box->currentText().toStdString();
}

void set_choice(QComboBox* box, const std::string& value) {
  const int i = value.empty() ? 0 : box->findText(QString::fromStdString(value));
  box->setCurrentIndex(std::max(i, 0));
}

std::string absolute(const QLineEdit* field) {
  const QString text = field->text().trimmed();
  return text.isEmpty() ? std::string() : QFileInfo(text).absoluteFilePath().toStdString();
}

}  // namespace

QWidget* TunePage::buildForm() {
  auto* form = new QWidget;
  auto* layout = new QVBoxLayout(form);
  layout->addWidget(buildConfigGroup());
  layout->addWidget(buildSearchGroup());
  layout->addWidget(buildWhereGroup());
  layout->addWidget(buildOutputGroup());
  layout->addWidget(buildButtons());
  layout->addStretch(1);
  scroll_wheel_past_unfocused_fields(form);
  return form;
}

QWidget* TunePage::buildConfigGroup() {
  auto* group = new QGroupBox(tr("Config and space"));
  auto* form = new QFormLayout(group);
  QWidget* row = nullptr;
  config_ = make_path_field(this, PathKind::kOpenFile, tr("The DeepSpeed config to tune (--config)"),
                            tr("DeepSpeed configs (*.json *.jsonc *.hjson);;All files (*)"), &row);
  form->addRow(tr("Config"), row);
  space_ = new QPlainTextEdit;
  space_->setPlaceholderText(tr("one KEY=V1,V2,... per line (--space); empty: the default space"));
  space_->setToolTip(tr("Each line is a --space flag: a dotted ds_config key and the values to try; it replaces the "
                        "default dimension of that key or adds one. none/default = the key left out."));
  space_->setFixedHeight(space_->fontMetrics().lineSpacing() * 5 + 12);
  form->addRow(tr("Space"), space_);
  auto* fill = new QPushButton(tr("Start from the default space"));
  fill->setToolTip(tr("Write the default space's dimensions as --space lines, to trim them"));
  connect(fill, &QPushButton::clicked, this, &TunePage::fillDefaultSpace);
  form->addRow(QString(), fill);
  space_preview_ = new QTableWidget(0, 3);
  space_preview_->setHorizontalHeaderLabels({tr("Key"), tr("Values"), tr("From")});
  space_preview_->verticalHeader()->hide();
  space_preview_->verticalHeader()->setDefaultSectionSize(space_preview_->fontMetrics().height() + 6);
  space_preview_->setWordWrap(false);
  space_preview_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  space_preview_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  space_preview_->setToolTip(tr("The space the tuner searches: the config's default space with the lines above in place"));
  space_preview_->setMinimumHeight(150);
  form->addRow(space_preview_);
  space_note_ = new QLabel;
  space_note_->setWordWrap(true);
  space_note_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  form->addRow(space_note_);
  connect(config_, &QLineEdit::textChanged, this, [this] { updateSpacePreview(); updateCliTwin(); });
  connect(space_, &QPlainTextEdit::textChanged, this, [this] { updateSpacePreview(); updateCliTwin(); });
  return group;
}

QWidget* TunePage::buildSearchGroup() {
  auto* group = new QGroupBox(tr("Search"));
  auto* form = new QFormLayout(group);
  metric_ = choice_box({tr("auto (the config's, else tokens/s)"), "tokens_per_s", "samples_per_s", "step_time"},
                       tr("What the tuner maximises (--metric); step_time is minimised"));
  tuner_ = choice_box({tr("auto (the config's, else grid)"), "gridsearch", "random", "model_based"},
                      tr("The order trials run in (--tuner, autotuning.tuner_type)"));
  trials_ = count_box(0, 100000, tr("the config's (50)"), tr("Run at most N trials; pruned ones are free (--trials)"));
  budget_ = new QLineEdit;
  budget_->setPlaceholderText(tr("none (e.g. 20m, 90s, 1h)"));
  budget_->setToolTip(tr("Stop starting trials once their wall time adds up to this (--budget)"));
  early_stopping_ = count_box(-1, 1000, tr("the config's (5)"),
                              tr("Stop after N trials in a row that do not beat the best; 0 = never (--early-stopping)"));
  profile_steps_ = new QLineEdit;
  profile_steps_->setPlaceholderText(tr("3:12 (or the config's)"));
  profile_steps_->setToolTip(tr("Each trial runs END steps, measured from START (--profile-steps START:END)"));
  form->addRow(tr("Metric"), metric_);
  form->addRow(tr("Tuner"), tuner_);
  form->addRow(tr("Trials"), trials_);
  form->addRow(tr("Time budget"), budget_);
  form->addRow(tr("Early stopping"), early_stopping_);
  form->addRow(tr("Profile steps"), profile_steps_);
  try_dominated_ = new QCheckBox(tr("Also try configs slower by construction (--try-dominated)"));
  try_dominated_->setToolTip(tr("By default a config with activation checkpointing or offload on is skipped while the "
                                "same config with it off fits and has not failed"));
  form->addRow(QString(), try_dominated_);
  connect(try_dominated_, &QCheckBox::toggled, this, &TunePage::updateCliTwin);
  for (QComboBox* box : {metric_, tuner_}) connect(box, &QComboBox::currentIndexChanged, this, &TunePage::updateCliTwin);
  for (QSpinBox* box : {trials_, early_stopping_}) connect(box, &QSpinBox::valueChanged, this, &TunePage::updateCliTwin);
  for (QLineEdit* field : {budget_, profile_steps_}) connect(field, &QLineEdit::textChanged, this, &TunePage::updateCliTwin);
  return group;
}

QWidget* TunePage::buildWhereGroup() {
  auto* group = new QGroupBox(tr("Where trials run and the memory they must fit"));
  auto* form = new QFormLayout(group);
  device_ = choice_box({tr("CPU processes (Gloo)"), tr("GPUs")},
                       tr("What each trial's ranks run on: --num_procs N or --num_gpus N per host"));
  processes_ = count_box(0, 4096, tr("the hostfile's slots"), tr("Ranks per host of every trial"));
  QWidget* row = nullptr;
  hostfile_ = make_path_field(this, PathKind::kOpenFile, tr("Run the trials on the hosts of this file (--hostfile); "
                                                            "empty: this machine"), tr("Hostfiles (*)"), &row);
  num_nodes_ = count_box(0, 4096, tr("every host"), tr("With a hostfile: its first N hosts (--num_nodes)"));
  memory_budget_ = new QLineEdit;
  memory_budget_->setPlaceholderText(tr("GPU 0's memory (e.g. 8GiB, 200MiB)"));
  memory_budget_->setToolTip(tr("The memory a rank may use (--memory-budget); needed without a GPU"));
  memory_margin_ = new QDoubleSpinBox;
  memory_margin_->setRange(-0.01, 0.9);
  memory_margin_->setSingleStep(0.05);
  memory_margin_->setSpecialValueText(tr("0.10 (default)"));
  memory_margin_->setToolTip(tr("The fraction of the budget kept free, as estimate --margin (--memory-margin)"));
  form->addRow(tr("Ranks on"), device_);
  form->addRow(tr("Ranks per host"), processes_);
  form->addRow(tr("Hostfile"), row);
  form->addRow(tr("Nodes"), num_nodes_);
  form->addRow(tr("Memory budget"), memory_budget_);
  form->addRow(tr("Margin"), memory_margin_);
  connect(device_, &QComboBox::currentIndexChanged, this, &TunePage::updateCliTwin);
  for (QSpinBox* box : {processes_, num_nodes_})
    connect(box, &QSpinBox::valueChanged, this, [this] { updateSpacePreview(); updateCliTwin(); });
  connect(hostfile_, &QLineEdit::textChanged, this, [this] { updateSpacePreview(); updateCliTwin(); });
  connect(memory_budget_, &QLineEdit::textChanged, this, &TunePage::updateCliTwin);
  connect(memory_margin_, &QDoubleSpinBox::valueChanged, this, &TunePage::updateCliTwin);
  return group;
}

QWidget* TunePage::buildOutputGroup() {
  auto* group = new QGroupBox(tr("Results and train arguments"));
  auto* form = new QFormLayout(group);
  QWidget* db_row = nullptr;
  QWidget* out_row = nullptr;
  db_ = make_path_field(this, PathKind::kSaveFile, tr("The session database of the trials and the tune tables (--db)"),
                        tr("Session files (*.db);;All files (*)"), &db_row);
  out_ = make_path_field(this, PathKind::kFolder, tr("Where ds_config.json, tune_report.md and exps/ go (--out)"), {},
                         &out_row);
  resume_ = new QCheckBox(tr("Resume the run of these flags (--resume)"));
  resume_->setToolTip(tr("Continue the killed or stopped run of the same config, space and flags; no finished trial repeats"));
  train_args_ = new QLineEdit;
  train_args_->setPlaceholderText(tr("--model gpt2 --layers 2 --hidden 64 --heads 2 --device cpu"));
  train_args_->setToolTip(tr("The `shardscope train` arguments of every trial, after `--` (model, shape, data); "
                             "not --config, --steps, --session, --name, --save or --load"));
  form->addRow(tr("Session database"), db_row);
  form->addRow(tr("Output folder"), out_row);
  form->addRow(QString(), resume_);
  form->addRow(tr("Train arguments"), train_args_);
  connect(db_, &QLineEdit::textChanged, this, [this] {
    updateCliTwin();
    if (restoring_ || runner_->isRunning()) return;  // the constructor reads the restored one
    reloadRuns();
    // Another database: its newest run shows, as at the page's start.
    if (runs_->count() > 0) showRun(db_->text(), runs_->itemData(0).toString());
  });
  for (QLineEdit* field : {out_, train_args_}) connect(field, &QLineEdit::textChanged, this, &TunePage::updateCliTwin);
  connect(resume_, &QCheckBox::toggled, this, &TunePage::updateCliTwin);
  return group;
}

QWidget* TunePage::buildButtons() {
  auto* box = new QWidget;
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* row = new QHBoxLayout;
  start_ = new QPushButton(tr("Start tuning"));
  start_->setToolTip(tr("Run `shardscope tune` with these flags (the command below)"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setToolTip(tr("SIGTERM to the tuner: it ends the running trial and every rank, writes its outputs from the "
                       "trials so far, and Resume continues; killed after 20 s"));
  connect(start_, &QPushButton::clicked, this, &TunePage::start);
  connect(stop_, &QPushButton::clicked, this, &TunePage::stop);
  row->addWidget(start_);
  row->addWidget(stop_);
  row->addStretch(1);
  layout->addLayout(row);
  cli_twin_ = new QLabel;
  cli_twin_->setWordWrap(true);
  cli_twin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_twin_->setToolTip(tr("The same tune run from a terminal"));
  cli_twin_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // wraps; never widens the page
  layout->addWidget(cli_twin_);
  return box;
}

TuneSpec TunePage::spec() const {
  TuneSpec s;
  s.config_path = absolute(config_);
  for (const QString& line : space_->toPlainText().split('\n', Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty()) s.space.push_back(line.trimmed().toStdString());
  s.metric = choice_value(metric_);
  s.tuner = choice_value(tuner_);
  s.trials = trials_->value();
  s.budget = budget_->text().trimmed().toStdString();
  s.early_stopping = early_stopping_->value();
  s.profile_steps = profile_steps_->text().trimmed().toStdString();
  s.device = device_->currentIndex() == 1 ? TuneDevice::kGpus : TuneDevice::kCpuProcesses;
  s.processes = processes_->value();
  s.hostfile = absolute(hostfile_);
  s.num_nodes = num_nodes_->value();
  s.memory_budget = memory_budget_->text().trimmed().toStdString();
  s.memory_margin = memory_margin_->value() < 0 ? -1 : memory_margin_->value();
  s.db = absolute(db_);
  s.out_dir = absolute(out_);
  s.resume = resume_->isChecked();
  s.try_dominated = try_dominated_->isChecked();
  s.train_args = train_args_->text().toStdString();
  return s;
}

void TunePage::setSpec(const TuneSpec& s) {
  restoring_ = true;  // one preview and one CLI twin at the end, not one per field
  config_->setText(QString::fromStdString(s.config_path));
  QStringList lines;
  for (const auto& line : s.space) lines << QString::fromStdString(line);
  space_->setPlainText(lines.join('\n'));
  set_choice(metric_, s.metric);
  set_choice(tuner_, s.tuner);
  trials_->setValue(s.trials);
  budget_->setText(QString::fromStdString(s.budget));
  early_stopping_->setValue(s.early_stopping);
  profile_steps_->setText(QString::fromStdString(s.profile_steps));
  device_->setCurrentIndex(s.device == TuneDevice::kGpus ? 1 : 0);
  processes_->setValue(s.processes);
  hostfile_->setText(QString::fromStdString(s.hostfile));
  num_nodes_->setValue(s.num_nodes);
  memory_budget_->setText(QString::fromStdString(s.memory_budget));
  memory_margin_->setValue(s.memory_margin < 0 ? -0.01 : s.memory_margin);
  db_->setText(QString::fromStdString(s.db));
  out_->setText(QString::fromStdString(s.out_dir));
  resume_->setChecked(s.resume);
  try_dominated_->setChecked(s.try_dominated);
  train_args_->setText(QString::fromStdString(s.train_args));
  restoring_ = false;
  updateSpacePreview();
  updateCliTwin();
}

void TunePage::fillDefaultSpace() {
  try {
    QStringList lines;
    for (const auto& line : default_space_lines(spec())) lines << QString::fromStdString(line);
    space_->setPlainText(lines.join('\n'));
  } catch (const std::exception& e) {
    emit statusMessage(QString::fromStdString(e.what()));
  }
}

void TunePage::updateSpacePreview() {
  if (!space_preview_ || restoring_) return;
  const SpacePreview preview = preview_space(spec());
  space_preview_->setRowCount(static_cast<int>(preview.rows.size()));
  for (int r = 0; r < space_preview_->rowCount(); ++r) {
    const SpaceRow& row = preview.rows[static_cast<std::size_t>(r)];
    space_preview_->setItem(r, 0, new QTableWidgetItem(QString::fromStdString(row.key)));
    space_preview_->setItem(r, 1, new QTableWidgetItem(QString::fromStdString(row.values)));
    space_preview_->setItem(r, 2, new QTableWidgetItem(QString::fromStdString(row.origin)));
    space_preview_->item(r, 0)->setToolTip(QString::fromStdString(row.key));
  }
  space_preview_->resizeColumnToContents(0);
  space_note_->setText(preview.error.empty()
                           ? tr("%1 grid point(s) before validation and the estimator's pruning. %2")
                                 .arg(preview.grid_points)
                                 .arg(QString::fromStdString(preview.note))
                           : QString::fromStdString(preview.error));
  space_note_->setStyleSheet(preview.error.empty() ? QString() : QStringLiteral("color: #8b1a1a"));
}

void TunePage::saveSettings() const {
  QSettings settings;
  const TuneSpec s = spec();
  settings.setValue("tune/config", QString::fromStdString(s.config_path));
  settings.setValue("tune/space", space_->toPlainText());
  settings.setValue("tune/memoryBudget", memory_budget_->text());
  settings.setValue("tune/processes", s.processes);
  settings.setValue("tune/device", device_->currentIndex());
  settings.setValue("tune/hostfile", hostfile_->text());
  settings.setValue("tune/db", db_->text());
  settings.setValue("tune/out", out_->text());
  settings.setValue("tune/trainArgs", train_args_->text());
}

void TunePage::restoreSettings() {
  QSettings settings;
  const QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  TuneSpec s;
  s.config_path = settings.value("tune/config").toString().toStdString();
  for (const QString& line : settings.value("tune/space").toString().split('\n', Qt::SkipEmptyParts))
    s.space.push_back(line.toStdString());
  s.memory_budget = settings.value("tune/memoryBudget").toString().toStdString();
  s.processes = settings.value("tune/processes", 2).toInt();
  s.device = settings.value("tune/device", 0).toInt() == 1 ? TuneDevice::kGpus : TuneDevice::kCpuProcesses;
  s.hostfile = settings.value("tune/hostfile").toString().toStdString();
  s.db = settings.value("tune/db", data + "/tune.db").toString().toStdString();
  s.out_dir = settings.value("tune/out", data + "/tune_results").toString().toStdString();
  s.train_args = settings.value("tune/trainArgs").toString().toStdString();
  setSpec(s);
}

}  // namespace shardscope::gui
