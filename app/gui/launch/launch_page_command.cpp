// LaunchPage, "your own command": a DeepSpeed, torchrun or Hugging Face Trainer command line,
// split as a shell would (configs::split_shell_words), run under `shardscope watch`, which gives
// the command a copy of its config with csv_monitor on (the user's file is never changed) and
// records the run as a session; the page follows that session and the command's output as it does
// for its own runs, and Stop ends the whole process tree (SIGTERM to watch, SIGKILL after the grace).
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/common/path_field.hpp"
#include "configs/shell_words.hpp"

namespace shardscope::gui {

QWidget* LaunchPage::buildModeGroup() {
  auto* box = new QGroupBox(tr("Run"));
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  mode_ = new QComboBox;
  mode_->addItems({tr("ShardScope's engine"), tr("your own command")});
  mode_->setToolTip(tr("Train with ShardScope's engine (shardscope launch), or follow your own deepspeed / torchrun "
                       "command live (shardscope watch)"));
  form->addRow(tr("What"), mode_);
  connect(mode_, &QComboBox::currentIndexChanged, this, [this] {
    showMode();
    updateCliTwin();
  });
  return box;
}

QWidget* LaunchPage::buildCommandGroup() {
  auto* box = new QGroupBox(tr("Your own command"));
  auto* form = new QFormLayout(box);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  command_ = new QLineEdit;
  command_->setPlaceholderText("deepspeed train.py --deepspeed ds.json");
  command_->setToolTip(tr("Split as a shell would; its DeepSpeed config (--deepspeed FILE, --deepspeed_config FILE "
                          "or a .json argument) is copied with csv_monitor turned on, and the copy is what it reads"));
  QWidget *dir_row = nullptr, *session_row = nullptr;
  command_dir_ = make_path_field(this, PathKind::kFolder, tr("The folder the command runs in (its relative paths)"),
                                 QString(), &dir_row);
  command_dir_->setPlaceholderText(tr("the GUI's working folder"));
  watch_session_ = make_path_field(this, PathKind::kSaveFile, tr("The session database the run is recorded in (--db)"),
                                   tr("Session files (*.db)"), &session_row);
  watch_name_ = new QLineEdit;
  watch_name_->setPlaceholderText(tr("the config file's name"));
  watch_name_->setToolTip(tr("Session name (--name)"));
  command_env_ = new QPlainTextEdit;
  command_env_->setPlaceholderText(tr("KEY=VALUE, one per line, e.g. NCCL_DEBUG=INFO"));
  command_env_->setToolTip(tr("Set for shardscope watch and so for your command (env KEY=VALUE shardscope watch ...)"));
  command_env_->setFixedHeight(command_env_->fontMetrics().lineSpacing() * 3 + 12);
  auto* hint = new QLabel(tr("The config copy, its csv_monitor folder and output.log go to "
                             "shardscope-watch-<time> beside the session file."));
  hint->setWordWrap(true);
  form->addRow(tr("Command"), command_);
  form->addRow(tr("Run in"), dir_row);
  form->addRow(tr("Session file"), session_row);
  form->addRow(tr("Name"), watch_name_);
  form->addRow(tr("Environment"), command_env_);
  form->addRow(hint);
  connect(command_env_, &QPlainTextEdit::textChanged, this, &LaunchPage::updateCliTwin);
  for (auto* field : {command_, command_dir_, watch_session_, watch_name_})
    connect(field, &QLineEdit::textChanged, this, &LaunchPage::updateCliTwin);
  command_group_ = box;
  return box;
}

void LaunchPage::showMode() {
  const bool own = ownCommand();
  command_group_->setVisible(own);
  for (QWidget* group : engine_groups_) group->setVisible(!own);
  showWhere();
  // The empty charts' hints name what the chosen kind of run has to be told, before it starts
  // too (the last mode's "no throughput yet" under "your own command" was the engine's hint).
  if (plots_ && !runner_->isRunning()) plots_->setRunKind(own ? LivePlots::RunKind::Watched : LivePlots::RunKind::Engine);
  if (banner_ && !runner_->isRunning() && session_uid_.isEmpty())  // before any run: what to fill in
    showBanner(own ? tr("Give your command (its DeepSpeed config among its arguments) and a session file, then Start.")
                   : tr("Choose a config, a model and a session file, then Start."),
               false);
}

void LaunchPage::setOwnCommand(bool own) { mode_->setCurrentIndex(own ? 1 : 0); }

bool LaunchPage::ownCommand() const { return mode_ && mode_->currentIndex() == 1; }

WatchSpec LaunchPage::watchSpec() const {
  WatchSpec s;
  try {
    s.command = configs::split_shell_words(command_->text().toStdString());
  } catch (const configs::UnclosedQuoteError& e) {
    throw std::invalid_argument(std::string("Command: ") + e.what());
  }
  s.session_file = watch_session_->text().trimmed().toStdString();
  s.name = watch_name_->text().trimmed().toStdString();
  s.working_dir = command_dir_->text().trimmed().toStdString();
  s.environment = parse_environment_lines(command_env_->toPlainText().toStdString());
  return s;
}

void LaunchPage::setWatchSpec(const WatchSpec& s) {
  QStringList words;
  for (const auto& w : s.command) words << QString::fromStdString(shell_command(w, {}));
  command_->setText(words.join(' '));
  watch_session_->setText(QString::fromStdString(s.session_file));
  watch_name_->setText(QString::fromStdString(s.name));
  command_dir_->setText(QString::fromStdString(s.working_dir));
  QStringList environment;
  for (const auto& e : s.environment) environment << QString::fromStdString(e);
  command_env_->setPlainText(environment.join('\n'));
}

void LaunchPage::startWatch() {
  WatchSpec w;
  std::vector<std::string> args;
  try {
    w = watchSpec();
    if (!w.session_file.empty()) w.session_file = QFileInfo(QString::fromStdString(w.session_file)).absoluteFilePath().toStdString();
    if (!w.working_dir.empty() && !QFileInfo(QString::fromStdString(w.working_dir)).isDir())
      throw std::invalid_argument("Run in: " + w.working_dir + " is not a folder; choose an existing one or leave it empty");
    args = watch_arguments(w);
  } catch (const std::exception& e) {
    showBanner(tr("<b>Cannot start:</b> %1").arg(QString::fromStdString(e.what()).toHtmlEscaped()), true);
    return;
  }
  QDir().mkpath(QFileInfo(QString::fromStdString(w.session_file)).absolutePath());
  running_ = LaunchSpec{};
  running_.session_file = w.session_file;
  running_.processes = 1;
  running_.steps = 0;  // the command's own business: progress shows steps without an end
  watching_ = true;
  resetWatchSide(1, 0);
  saveSettings();
  if (!startCli(args, 1, QString::fromStdString(w.working_dir), w.environment)) return;
  showBanner(tr("Running your command under shardscope watch into %1\u2026")
                 .arg(QString::fromStdString(w.session_file).toHtmlEscaped()), false);
}

}  // namespace shardscope::gui
