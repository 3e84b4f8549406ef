// LaunchPage, the form: one section per concern (config and overrides, model and data, where,
// run, checkpoints, profiling), each field naming its flag, and the LaunchSpec they hold.
#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/hostfile_editor.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/common/path_field.hpp"

namespace shardscope::gui {
namespace {

QSpinBox* spin(int min, int max, int value, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(min, max);
  box->setValue(value);
  box->setToolTip(tooltip);
  return box;
}

/// A spin box whose 0 means "the flag is not given" and says what applies instead.
QSpinBox* optional_spin(int max, const QString& when_zero, const QString& tooltip) {
  QSpinBox* box = spin(0, max, 0, tooltip);
  box->setSpecialValueText(when_zero);
  return box;
}

/// A titled group box with a form inside, `*group` to add to the page's column.
QFormLayout* section(const QString& title, QWidget** group) {
  auto* box = new QGroupBox(title);
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  *group = box;
  return form;
}

QStringList lines_of(const QPlainTextEdit* edit) {
  QStringList lines;
  for (const QString& line : edit->toPlainText().split('\n'))
    if (!line.trimmed().isEmpty()) lines << line.trimmed();
  return lines;
}

QString join_words(const std::vector<std::string>& words) {
  QStringList out;
  for (const auto& w : words) out << QString::fromStdString(shell_command(w, {}));
  return out.join(' ');
}

}  // namespace

QLineEdit* LaunchPage::pathField(const QString& tooltip, const QString& filter, bool save, QWidget** row) {
  const PathKind kind = filter.isEmpty() ? PathKind::kFolder : save ? PathKind::kSaveFile : PathKind::kOpenFile;
  QLineEdit* field = make_path_field(this, kind, tooltip, filter, row);
  connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  return field;
}

QWidget* LaunchPage::buildConfigGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("DeepSpeed config"), &column);
  config_source_ = new QComboBox;
  config_source_->addItems({tr("Config Editor's document"), tr("A file")});
  config_source_->setToolTip(tr("The editor's current text is saved to a file for the run; or choose a file"));
  QWidget* row = nullptr;
  config_file_ = pathField(tr("A DeepSpeed config (--config)"), tr("DeepSpeed config (*.json *.jsonc *.hjson);;All files (*)"), false, &row);
  overrides_ = new QPlainTextEdit;
  overrides_->setPlaceholderText(tr("KEY=VALUE, one per line, e.g. zero_optimization.stage=3"));
  overrides_->setToolTip(tr("Each line becomes --set KEY=VALUE: it overrides or fills a config value"));
  overrides_->setFixedHeight(overrides_->fontMetrics().lineSpacing() * 3 + 12);
  form->addRow(tr("From"), config_source_);
  form->addRow(tr("File"), row);
  form->addRow(tr("Overrides"), overrides_);
  connect(config_source_, &QComboBox::currentIndexChanged, this, [this, row](int i) {
    row->setEnabled(i == 1);
    updateCliTwin();
  });
  connect(overrides_, &QPlainTextEdit::textChanged, this, &LaunchPage::updateCliTwin);
  return column;
}

QWidget* LaunchPage::buildModelGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("Model and data"), &column);
  model_ = new QComboBox;
  model_->addItems({"gpt2", "llama", "mlp"});
  model_->setToolTip(tr("Built-in model (--model)"));
  layers_ = spin(1, 1000, 2, tr("Decoder layers (--layers)"));
  hidden_ = spin(8, 1 << 16, 128, tr("Hidden size (--hidden)"));
  heads_ = spin(1, 1024, 4, tr("Attention heads (--heads)"));
  kv_heads_ = optional_spin(1024, tr("default"), tr("Key/value heads, llama (--kv-heads); default = heads / 2"));
  seq_len_ = spin(1, 1 << 20, 64, tr("Tokens per sample (--seq-len)"));
  vocab_ = spin(2, 1 << 22, 512, tr("Vocabulary size (--vocab)"));
  activation_checkpointing_ = new QCheckBox(tr("activation checkpointing"));
  activation_checkpointing_->setToolTip(tr("Recompute each block in backward (--activation-checkpointing)"));
  QWidget *hf_row = nullptr, *weights_row = nullptr, *data_row = nullptr;
  hf_config_ = pathField(tr("A Hugging Face config.json giving the sizes (--model-config); overrides the fields above"),
                         tr("config.json (*.json)"), false, &hf_row);
  hf_config_->setPlaceholderText(tr("optional"));
  weights_ = pathField(tr("safetensors weights with Hugging Face names (--weights)"),
                       tr("safetensors (*.safetensors *.json)"), false, &weights_row);
  weights_->setPlaceholderText(tr("optional"));
  data_ = pathField(tr("A token file (uint16/uint32, nanoGPT or llm.c), or empty for synthetic tokens (--data)"),
                    tr("Token files (*.bin);;All files (*)"), false, &data_row);
  data_->setPlaceholderText(tr("synthetic"));
  form->addRow(tr("Model"), model_);
  for (auto [label, box] : {std::pair{tr("Layers"), layers_}, {tr("Hidden"), hidden_}, {tr("Heads"), heads_},
                            {tr("KV heads"), kv_heads_}, {tr("Sequence length"), seq_len_}, {tr("Vocabulary"), vocab_}}) {
    form->addRow(label, box);
    connect(box, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  }
  form->addRow(activation_checkpointing_);
  form->addRow(tr("HF config.json"), hf_row);
  form->addRow(tr("Weights"), weights_row);
  form->addRow(tr("Token file"), data_row);
  connect(model_, &QComboBox::currentIndexChanged, this, &LaunchPage::updateCliTwin);
  connect(activation_checkpointing_, &QCheckBox::toggled, this, &LaunchPage::updateCliTwin);
  return column;
}

QWidget* LaunchPage::buildWhereGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("Where"), &column);
  where_ = new QComboBox;
  where_->addItems({tr("this machine, CPU processes"), tr("this machine, GPUs"), tr("these hosts, CPU processes"),
                    tr("these hosts, GPUs")});
  where_->setToolTip(tr("--num_procs N (Gloo on the CPU) or --num_gpus N (NCCL), here or on every host of a hostfile "
                        "(--hostfile)"));
  where_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);  // never widens the form
  where_->setMinimumContentsLength(12);
  processes_ = spin(1, 256, 2, tr("Ranks to start (--num_procs or --num_gpus)"));
  include_ = new QLineEdit;
  include_->setPlaceholderText(tr("all visible GPUs"));
  include_->setToolTip(tr("GPUs to use, DeepSpeed syntax localhost:0,2 (--include); replaces the rank count"));
  master_addr_ = new QLineEdit;
  master_addr_->setPlaceholderText("127.0.0.1");
  master_addr_->setToolTip(tr("Rendezvous address (--master_addr)"));
  master_port_ = optional_spin(65535, tr("29500 (default)"), tr("Rendezvous port (--master_port); another run may hold 29500"));
  QWidget* row = nullptr;
  rank_logs_ = pathField(tr("Also write each rank's output to DIR/<time>_rank<R>.log (--enable_each_rank_log)"), QString(),
                         false, &row);
  rank_logs_->setPlaceholderText(tr("off"));
  form->addRow(tr("Where"), where_);
  form->addRow(tr("Ranks"), processes_);
  form->addRow(tr("GPUs"), include_);
  form->addRow(tr("Master address"), master_addr_);
  form->addRow(tr("Master port"), master_port_);
  form->addRow(tr("Rank logs"), row);
  for (auto* box : {processes_, master_port_}) connect(box, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  connect(where_, &QComboBox::currentIndexChanged, this, &LaunchPage::updateCliTwin);
  for (auto* field : {include_, master_addr_}) connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  return column;
}

QWidget* LaunchPage::buildRunGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("Run"), &column);
  steps_ = spin(1, 100000000, 50, tr("Optimizer steps to reach (--steps)"));
  QWidget* row = nullptr;
  session_file_ = pathField(tr("The session database the run is recorded in (--session); it may hold other runs"),
                            tr("Session files (*.db)"), true, &row);
  name_ = new QLineEdit;
  name_->setPlaceholderText(tr("the config file's name"));
  name_->setToolTip(tr("Session name (--name)"));
  seed_ = optional_spin(1 << 30, tr("42 (default)"), tr("Seed of the weights and data (--seed)"));
  hang_after_ = optional_spin(86400, tr("max(60 s, 20 x median step)"),
                              tr("The run doctor calls it a hang when no step and no collective completed for this "
                                 "many seconds (--hang-after)"));
  hang_after_->setSuffix(tr(" s"));
  stop_on_hang_ = new QCheckBox(tr("stop every rank on a hang (--on-hang stop)"));
  stop_on_hang_->setToolTip(tr("Else the doctor names the culprit and the run keeps waiting (--on-hang report)"));
  extra_args_ = new QLineEdit;
  extra_args_->setPlaceholderText(tr("more train flags, e.g. --device cpu"));
  extra_args_->setToolTip(tr("Appended to every rank's `shardscope train` arguments, split as a shell would"));
  form->addRow(tr("Steps"), steps_);
  form->addRow(tr("Session file"), row);
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Seed"), seed_);
  form->addRow(tr("Hang after"), hang_after_);
  form->addRow(QString(), stop_on_hang_);
  form->addRow(tr("Extra arguments"), extra_args_);
  for (auto* box : {steps_, seed_, hang_after_}) connect(box, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  connect(stop_on_hang_, &QCheckBox::toggled, this, &LaunchPage::updateCliTwin);
  for (auto* field : {name_, extra_args_}) connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  return column;
}

QWidget* LaunchPage::buildCheckpointGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("Checkpoints"), &column);
  QWidget *save_row = nullptr, *load_row = nullptr;
  save_dir_ = pathField(tr("Checkpoint folder, DeepSpeed layout, written at the end (--save)"), QString(), false, &save_row);
  save_dir_->setPlaceholderText(tr("none"));
  save_every_ = optional_spin(1 << 30, tr("at the end only"), tr("Also save every K steps (--save-every)"));
  load_dir_ = pathField(tr("Resume from DIR/latest (--load); --steps counts from the start of training"), QString(),
                        false, &load_row);
  load_dir_->setPlaceholderText(tr("start fresh"));
  form->addRow(tr("Save to"), save_row);
  form->addRow(tr("Save every"), save_every_);
  form->addRow(tr("Resume from"), load_row);
  connect(save_every_, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  // "Every K steps" saves into the folder above: with none it means nothing (and is not passed).
  auto follow_save_dir = [this] { save_every_->setEnabled(!save_dir_->text().trimmed().isEmpty()); };
  connect(save_dir_, &QLineEdit::textChanged, this, follow_save_dir);
  follow_save_dir();
  return column;
}

QWidget* LaunchPage::buildProfileGroup() {
  QWidget* column = nullptr;
  QFormLayout* form = section(tr("Profiling"), &column);
  profile_start_ = optional_spin(100000000, tr("off"), tr("First step of the profiled window (--profile-steps START:COUNT): "
                                                          "kernels, copies and NVTX ranges into the session"));
  profile_count_ = spin(1, 10000, 2, tr("Steps in the profiled window"));
  form->addRow(tr("Profile from step"), profile_start_);
  form->addRow(tr("Steps profiled"), profile_count_);
  auto* hint = new QLabel(tr("Timers and collectives come from the config: wall_clock_breakdown, comms_logger."));
  hint->setWordWrap(true);
  form->addRow(hint);
  profile_count_->setEnabled(false);
  connect(profile_start_, &QSpinBox::valueChanged, this, [this](int start) {
    profile_count_->setEnabled(start > 0);
    updateCliTwin();
  });
  connect(profile_count_, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  return column;
}

QWidget* LaunchPage::buildForm() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  engine_groups_ = {buildConfigGroup(), buildModelGroup(), buildWhereGroup(), buildRunGroup(),
                    buildCheckpointGroup(), buildProfileGroup()};
  QWidget* hosts = buildHostsGroup();
  layout->addWidget(buildModeGroup());
  layout->addWidget(buildCommandGroup());
  for (QWidget* group : engine_groups_) {
    layout->addWidget(group);
    if (group == engine_groups_[2]) layout->addWidget(hosts);  // under Where
  }
  layout->addWidget(buildButtons());
  layout->addStretch(1);
  connect(where_, &QComboBox::currentIndexChanged, this, &LaunchPage::showWhere);
  showWhere();
  showMode();
  return panel;
}

void LaunchPage::setSpec(const LaunchSpec& s) {
  config_file_->setText(QString::fromStdString(s.config_path));
  QStringList overrides;
  for (const auto& o : s.overrides) overrides << QString::fromStdString(o);
  overrides_->setPlainText(overrides.join('\n'));
  model_->setCurrentText(QString::fromStdString(s.model));
  hf_config_->setText(QString::fromStdString(s.hf_config));
  weights_->setText(QString::fromStdString(s.weights));
  for (auto [box, value] : {std::pair{layers_, s.layers}, {hidden_, s.hidden}, {heads_, s.heads}, {kv_heads_, s.kv_heads},
                            {seq_len_, s.seq_len}, {vocab_, s.vocab}, {processes_, s.processes},
                            {master_port_, s.master_port}, {steps_, s.steps}, {seed_, s.seed},
                            {hang_after_, s.hang_after_s},
                            {save_every_, s.save_every}, {profile_start_, s.profile_start},
                            {profile_count_, s.profile_count}})
    box->setValue(value);
  activation_checkpointing_->setChecked(s.activation_checkpointing);
  stop_on_hang_->setChecked(s.stop_on_hang);
  data_->setText(s.data == "synthetic" ? QString() : QString::fromStdString(s.data));
  where_->setCurrentIndex((s.hostfile.empty() ? 0 : 2) + (s.use_gpus ? 1 : 0));
  if (!s.hostfile.empty()) hostfile_->setPath(QString::fromStdString(s.hostfile));
  num_nodes_->setValue(s.num_nodes);
  exclude_->setText(QString::fromStdString(s.exclude));
  node_launcher_->setCurrentIndex(s.launcher == "pdsh" ? 1 : 0);
  ssh_port_->setValue(s.ssh_port);
  launcher_args_->setText(QString::fromStdString(s.launcher_args));
  for (auto [field, value] : {std::pair{include_, &s.include}, {master_addr_, &s.master_addr},
                              {rank_logs_, &s.each_rank_log_dir}, {session_file_, &s.session_file}, {name_, &s.name},
                              {save_dir_, &s.save_dir}, {load_dir_, &s.load_dir}})
    field->setText(QString::fromStdString(*value));
  extra_args_->setText(join_words(s.extra_train_args));
}

LaunchSpec LaunchPage::spec() const {
  LaunchSpec s;
  s.config_path = config_source_->currentIndex() == 1 ? config_file_->text().trimmed().toStdString()
                  : editor_path_ && !editor_path_().isEmpty() ? editor_path_().toStdString()
                                                               : std::string("(Config Editor's document)");
  for (const QString& line : lines_of(overrides_)) s.overrides.push_back(line.toStdString());
  s.model = model_->currentText().toStdString();
  s.hf_config = hf_config_->text().trimmed().toStdString();
  s.weights = weights_->text().trimmed().toStdString();
  s.layers = layers_->value();
  s.hidden = hidden_->value();
  s.heads = heads_->value();
  s.kv_heads = kv_heads_->value();
  s.seq_len = seq_len_->value();
  s.vocab = vocab_->value();
  s.activation_checkpointing = activation_checkpointing_->isChecked();
  s.data = data_->text().trimmed().isEmpty() ? "synthetic" : data_->text().trimmed().toStdString();
  s.use_gpus = where_->currentIndex() % 2 == 1;
  s.processes = processes_->value();
  s.include = s.use_gpus ? include_->text().trimmed().toStdString() : std::string();
  s.master_addr = master_addr_->text().trimmed().toStdString();
  s.master_port = master_port_->value();
  s.each_rank_log_dir = rank_logs_->text().trimmed().toStdString();
  s.steps = steps_->value();
  s.session_file = session_file_->text().trimmed().toStdString();
  s.name = name_->text().trimmed().toStdString();
  s.seed = seed_->value();
  s.hang_after_s = hang_after_->value();
  s.stop_on_hang = stop_on_hang_->isChecked();
  s.save_dir = save_dir_->text().trimmed().toStdString();
  s.save_every = s.save_dir.empty() ? 0 : save_every_->value();
  s.load_dir = load_dir_->text().trimmed().toStdString();
  s.profile_start = profile_start_->value();
  s.profile_count = profile_count_->value();
  s.extra_train_args = split_shell_words(extra_args_->text().toStdString());
  fillHostsSpec(s);
  return s;
}

void LaunchPage::saveSettings() const {
  QSettings settings;
  settings.setValue("launch/where", where_->currentIndex());
  settings.setValue("launch/hostfile", hostfile_->path());
  settings.setValue("launch/ownCommand", ownCommand());
  settings.setValue("launch/command", command_->text());
  settings.setValue("launch/commandDir", command_dir_->text());
  settings.setValue("launch/commandEnvironment", command_env_->toPlainText());
  settings.setValue("launch/watchSession", watch_session_->text());
  LaunchSpec s;
  try {
    s = spec();
  } catch (const std::invalid_argument&) {
    return;  // "your own command" started while the engine's fields are incomplete: they stay as saved
  }
  settings.setValue("launch/configSource", config_source_->currentIndex());
  settings.setValue("launch/configFile", config_file_->text());
  settings.setValue("launch/overrides", overrides_->toPlainText());
  settings.setValue("launch/model", QString::fromStdString(s.model));
  settings.setValue("launch/shape", QList<QVariant>{s.layers, s.hidden, s.heads, s.seq_len, s.vocab, s.kv_heads});
  settings.setValue("launch/hfConfig", hf_config_->text());
  settings.setValue("launch/weights", weights_->text());
  settings.setValue("launch/data", data_->text());
  settings.setValue("launch/useGpus", s.use_gpus);
  settings.setValue("launch/processes", s.processes);
  settings.setValue("launch/masterPort", s.master_port);
  settings.setValue("launch/steps", s.steps);
  settings.setValue("launch/sessionFile", session_file_->text());
  settings.setValue("launch/profile", QList<QVariant>{s.profile_start, s.profile_count});
  settings.setValue("launch/extraArgs", extra_args_->text());
}

void LaunchPage::restoreSettings() {
  QSettings settings;
  LaunchSpec s;
  s.config_path = settings.value("launch/configFile").toString().toStdString();
  for (const QString& line : settings.value("launch/overrides").toString().split('\n', Qt::SkipEmptyParts))
    s.overrides.push_back(line.toStdString());
  s.model = settings.value("launch/model", "gpt2").toString().toStdString();
  const QList<QVariant> shape = settings.value("launch/shape").toList();
  if (shape.size() >= 5) {
    s.layers = shape[0].toInt();
    s.hidden = shape[1].toInt();
    s.heads = shape[2].toInt();
    s.seq_len = shape[3].toInt();
    s.vocab = shape[4].toInt();
    s.kv_heads = shape.value(5).toInt();
  }
  s.hf_config = settings.value("launch/hfConfig").toString().toStdString();
  s.weights = settings.value("launch/weights").toString().toStdString();
  s.data = settings.value("launch/data").toString().toStdString();
  s.use_gpus = settings.value("launch/useGpus", false).toBool();
  s.processes = settings.value("launch/processes", 2).toInt();
  s.master_port = settings.value("launch/masterPort", 0).toInt();
  s.steps = settings.value("launch/steps", 50).toInt();
  const QString default_session = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/sessions.db";
  s.session_file = settings.value("launch/sessionFile", default_session).toString().toStdString();
  const QList<QVariant> profile = settings.value("launch/profile").toList();
  if (profile.size() == 2) s.profile_start = profile[0].toInt(), s.profile_count = profile[1].toInt();
  try {
    s.extra_train_args = split_shell_words(settings.value("launch/extraArgs").toString().toStdString());
  } catch (const std::invalid_argument&) {
    // A saved line with an unclosed quote is dropped rather than refusing to open the page.
  }
  setSpec(s);
  config_source_->setCurrentIndex(settings.value("launch/configSource", 0).toInt());
  where_->setCurrentIndex(settings.value("launch/where", s.use_gpus ? 1 : 0).toInt());
  if (const QString hostfile = settings.value("launch/hostfile").toString(); !hostfile.isEmpty())
    if (!hostfile_->openFile(hostfile)) hostfile_->setPath(hostfile);
  command_->setText(settings.value("launch/command").toString());
  command_dir_->setText(settings.value("launch/commandDir").toString());
  command_env_->setPlainText(settings.value("launch/commandEnvironment").toString());
  watch_session_->setText(settings.value("launch/watchSession", default_session).toString());
  setOwnCommand(settings.value("launch/ownCommand", false).toBool());
}

}  // namespace shardscope::gui
