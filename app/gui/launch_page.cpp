#include "app/gui/launch_page.hpp"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "app/gui/cli_locator.hpp"
#include "app/gui/launch_runner.hpp"
#include "app/gui/live_plots.hpp"
#include "app/gui/rank_console.hpp"
#include "app/gui/session_poller.hpp"

namespace shardscope::gui {
namespace {

QSpinBox* spin(int min, int max, int value, const QString& tooltip) {
  auto* box = new QSpinBox;
  box->setRange(min, max);
  box->setValue(value);
  box->setToolTip(tooltip);
  return box;
}

}  // namespace

LaunchPage::LaunchPage(QWidget* parent) : QWidget(parent) {
  runner_ = new LaunchRunner(this);
  poller_ = new SessionPoller(this);
  connect(runner_, &LaunchRunner::lineReceived, this, [this](const ConsoleLine& line) { console_->append(line); });
  connect(runner_, &LaunchRunner::sessionAnnounced, this, [this](const QString& uid) {
    session_uid_ = uid;
    poller_->follow(QString::fromStdString(running_.session_file), uid);
  });
  connect(runner_, &LaunchRunner::finished, this, &LaunchPage::onFinished);
  connect(poller_, &SessionPoller::updated, this, &LaunchPage::onUpdate);

  auto* splitter = new QSplitter(this);
  auto* scroll = new QScrollArea;
  scroll->setWidget(buildForm());
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(300);
  splitter->addWidget(scroll);
  splitter->addWidget(buildWatch());
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  restoreSettings();
  updateCliTwin();
}

LaunchPage::~LaunchPage() { shutdown(); }

QLineEdit* LaunchPage::pathField(const QString& tooltip, const QString& filter, bool save, QWidget** row) {
  auto* field = new QLineEdit;
  field->setToolTip(tooltip);
  field->setClearButtonEnabled(true);
  auto* browse = new QPushButton(tr("Browse\u2026"));
  connect(browse, &QPushButton::clicked, this, [this, field, filter, save] {
    const QString path = save ? QFileDialog::getSaveFileName(this, tr("Session file"), field->text(), filter,
                                                             nullptr, QFileDialog::DontConfirmOverwrite)
                              : QFileDialog::getOpenFileName(this, tr("Choose a file"), field->text(), filter);
    if (!path.isEmpty()) field->setText(path);
  });
  connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  *row = new QWidget;
  auto* layout = new QHBoxLayout(*row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  layout->addWidget(browse);
  return field;
}

QWidget* LaunchPage::buildConfigGroup() {
  auto* group = new QGroupBox(tr("DeepSpeed config"));
  auto* form = new QFormLayout(group);
  config_source_ = new QComboBox;
  config_source_->addItems({tr("Config Editor's document"), tr("A file")});
  config_source_->setToolTip(tr("The editor's current text is saved to a file for the run; or choose a file"));
  QWidget* row = nullptr;
  config_file_ = pathField(tr("A DeepSpeed config (--config)"), tr("DeepSpeed config (*.json)"), false, &row);
  form->addRow(tr("From"), config_source_);
  form->addRow(tr("File"), row);
  connect(config_source_, &QComboBox::currentIndexChanged, this, [this, row](int i) {
    row->setEnabled(i == 1);
    updateCliTwin();
  });
  return group;
}

QWidget* LaunchPage::buildModelGroup() {
  auto* group = new QGroupBox(tr("Model and data"));
  auto* form = new QFormLayout(group);
  model_ = new QComboBox;
  model_->addItems({"gpt2", "llama", "mlp"});
  model_->setToolTip(tr("Built-in model (--model)"));
  layers_ = spin(1, 1000, 2, tr("Decoder layers (--layers)"));
  hidden_ = spin(8, 1 << 16, 128, tr("Hidden size (--hidden)"));
  heads_ = spin(1, 1024, 4, tr("Attention heads (--heads)"));
  seq_len_ = spin(1, 1 << 20, 64, tr("Tokens per sample (--seq-len)"));
  vocab_ = spin(2, 1 << 22, 512, tr("Vocabulary size (--vocab)"));
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
                            {tr("Sequence length"), seq_len_}, {tr("Vocabulary"), vocab_}}) {
    form->addRow(label, box);
    connect(box, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  }
  form->addRow(tr("HF config.json"), hf_row);
  form->addRow(tr("Weights"), weights_row);
  form->addRow(tr("Token file"), data_row);
  connect(model_, &QComboBox::currentIndexChanged, this, &LaunchPage::updateCliTwin);
  return group;
}

QWidget* LaunchPage::buildRunGroup() {
  auto* group = new QGroupBox(tr("Run"));
  auto* form = new QFormLayout(group);
  where_ = new QComboBox;
  where_->addItems({tr("this machine, CPU processes"), tr("this machine, GPUs")});
  where_->setToolTip(tr("--num_procs N (Gloo on the CPU) or --num_gpus N (NCCL)"));
  processes_ = spin(1, 256, 2, tr("Ranks to start"));
  steps_ = spin(1, 100000000, 50, tr("Optimizer steps (--steps)"));
  QWidget* row = nullptr;
  session_file_ = pathField(tr("The session database the run is recorded in (--session); it may hold other runs"),
                            tr("Session files (*.db)"), true, &row);
  name_ = new QLineEdit;
  name_->setPlaceholderText(tr("the config file's name"));
  name_->setToolTip(tr("Session name (--name)"));
  form->addRow(tr("Where"), where_);
  form->addRow(tr("Ranks"), processes_);
  form->addRow(tr("Steps"), steps_);
  form->addRow(tr("Session file"), row);
  form->addRow(tr("Name"), name_);
  for (auto* box : {processes_, steps_}) connect(box, &QSpinBox::valueChanged, this, &LaunchPage::updateCliTwin);
  connect(where_, &QComboBox::currentIndexChanged, this, &LaunchPage::updateCliTwin);
  connect(name_, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  return group;
}

QWidget* LaunchPage::buildForm() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->addWidget(buildConfigGroup());
  layout->addWidget(buildModelGroup());
  layout->addWidget(buildRunGroup());
  start_ = new QPushButton(tr("Start"));
  start_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  start_->setToolTip(tr("Start the run (Ctrl+R)"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setToolTip(tr("SIGTERM to the launcher, which stops every rank; killed after a grace period (Ctrl+.)"));
  stop_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  stop_->setEnabled(false);
  connect(start_, &QPushButton::clicked, this, &LaunchPage::start);
  connect(stop_, &QPushButton::clicked, this, &LaunchPage::stop);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(start_);
  buttons->addWidget(stop_);
  layout->addLayout(buttons);
  cli_twin_ = new QLabel;
  cli_twin_->setWordWrap(true);
  cli_twin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_twin_->setToolTip(tr("The same run from a terminal"));
  layout->addWidget(cli_twin_);
  layout->addStretch(1);
  return panel;
}

QWidget* LaunchPage::buildWatch() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  banner_ = new QLabel(tr("Choose a config, a model and a session file, then Start."));
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setFrameShape(QFrame::StyledPanel);
  progress_ = new QProgressBar;
  progress_->setFormat(tr("step %v of %m"));
  eta_ = new QLabel;
  follow_ = new QPushButton(tr("Pause view"));
  follow_->setCheckable(true);
  follow_->setToolTip(tr("Stop following the newest steps, to zoom and pan freely (data keeps arriving)"));
  window_ = spin(0, 1000000, 300, tr("Steps shown while following (0 = all)"));
  window_->setSpecialValueText(tr("all"));
  open_session_ = new QPushButton(tr("Open in Sessions && Compare"));
  open_session_->setEnabled(false);
  connect(open_session_, &QPushButton::clicked, this, [this] {
    emit openSession(QString::fromStdString(running_.session_file), session_uid_);
  });
  plots_ = new LivePlots;
  connect(follow_, &QPushButton::toggled, this, [this](bool paused) {
    plots_->setFollow(!paused);
    follow_->setText(paused ? tr("Follow") : tr("Pause view"));
  });
  connect(window_, &QSpinBox::valueChanged, plots_, &LivePlots::setWindow);
  auto* bar = new QHBoxLayout;
  bar->addWidget(progress_, 1);
  bar->addWidget(eta_);
  bar->addWidget(new QLabel(tr("last")));
  bar->addWidget(window_);
  bar->addWidget(follow_);
  bar->addWidget(open_session_);
  console_ = new RankConsole;
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(plots_);
  split->addWidget(console_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(banner_);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  return panel;
}

void LaunchPage::setEditorDocument(std::function<QString()> text, std::function<QString()> path) {
  editor_text_ = std::move(text);
  editor_path_ = std::move(path);
  updateCliTwin();
}

void LaunchPage::setUseEditorConfig(bool use) { config_source_->setCurrentIndex(use ? 0 : 1); }

void LaunchPage::setSpec(const LaunchSpec& s) {
  config_file_->setText(QString::fromStdString(s.config_path));
  model_->setCurrentText(QString::fromStdString(s.model));
  hf_config_->setText(QString::fromStdString(s.hf_config));
  weights_->setText(QString::fromStdString(s.weights));
  layers_->setValue(s.layers);
  hidden_->setValue(s.hidden);
  heads_->setValue(s.heads);
  seq_len_->setValue(s.seq_len);
  vocab_->setValue(s.vocab);
  data_->setText(s.data == "synthetic" ? QString() : QString::fromStdString(s.data));
  where_->setCurrentIndex(s.use_gpus ? 1 : 0);
  processes_->setValue(s.processes);
  steps_->setValue(s.steps);
  session_file_->setText(QString::fromStdString(s.session_file));
  name_->setText(QString::fromStdString(s.name));
}

LaunchSpec LaunchPage::spec() const {
  LaunchSpec s;
  s.config_path = config_source_->currentIndex() == 1 ? config_file_->text().trimmed().toStdString()
                  : editor_path_ && !editor_path_().isEmpty() ? editor_path_().toStdString()
                                                               : std::string("(Config Editor's document)");
  s.model = model_->currentText().toStdString();
  s.hf_config = hf_config_->text().trimmed().toStdString();
  s.weights = weights_->text().trimmed().toStdString();
  s.layers = layers_->value();
  s.hidden = hidden_->value();
  s.heads = heads_->value();
  s.seq_len = seq_len_->value();
  s.vocab = vocab_->value();
  s.data = data_->text().trimmed().isEmpty() ? "synthetic" : data_->text().trimmed().toStdString();
  s.use_gpus = where_->currentIndex() == 1;
  s.processes = processes_->value();
  s.steps = steps_->value();
  s.session_file = session_file_->text().trimmed().toStdString();
  s.name = name_->text().trimmed().toStdString();
  return s;
}

void LaunchPage::updateCliTwin() {
  if (!cli_twin_) return;
  try {
    cli_twin_->setText(QString::fromStdString(shell_command("shardscope", launch_arguments(spec()))));
  } catch (const std::exception& e) {
    cli_twin_->setText(tr("<i>%1</i>").arg(QString::fromStdString(e.what()).toHtmlEscaped()));
  }
}

}  // namespace shardscope::gui
