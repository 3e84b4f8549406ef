// The Config Editor's "Validate as the Hugging Face Trainer fills it": the TrainingArguments as
// `shardscope validate --hf-trainer K=V,...` takes them, given to the same configs::validate (its
// ValidateOptions::hf_trainer), so "auto" is filled as transformers' HfTrainerDeepSpeedConfig does;
// its mismatch errors land in the Diagnostics list at the line of each key, and what it wrote is
// listed in the "Trainer fill" tab.
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/common/rows_table_model.hpp"
#include "configs/hf_trainer_fill.hpp"

namespace shardscope::gui {
namespace {

int line_of(const std::vector<configs::ResolvedValue>& resolved, const std::string& path) {
  for (const auto& value : resolved)
    if (value.path == path) return value.location.line;
  return 0;
}

}  // namespace

QWidget* ConfigEditorPage::buildHfTrainerRow() {
  auto* box = new QWidget;
  auto* rows = new QVBoxLayout(box);
  rows->setContentsMargins(6, 0, 6, 0);
  rows->setSpacing(2);
  auto* layout = new QHBoxLayout;
  hf_trainer_ = new QCheckBox(tr("Validate as the Hugging Face Trainer fills it"));
  hf_trainer_->setToolTip(tr("Fill every \"auto\" from these TrainingArguments as transformers' "
                             "HfTrainerDeepSpeedConfig does and report its mismatches (--hf-trainer)"));
  hf_arguments_ = new QLineEdit;
  hf_arguments_->setPlaceholderText(tr("TrainingArguments K=V,... e.g. per_device_train_batch_size=4,"
                                       "learning_rate=3e-5,bf16=true (empty: transformers' defaults)"));
  hf_arguments_->setToolTip(tr("per_device_train_batch_size, gradient_accumulation_steps, learning_rate, "
                               "weight_decay, adam_beta1, adam_beta2, adam_epsilon, max_grad_norm, fp16, bf16, "
                               "warmup_steps, max_steps, hidden_size (the model's); world size: the toolbar's"));
  hf_arguments_->setEnabled(false);
  hf_status_ = new QLabel;
  hf_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hf_status_->setWordWrap(true);
  // Under the field, wrapping: an unknown key's message lists every accepted key and must not
  // widen the window.
  hf_status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hf_status_->setVisible(false);
  connect(hf_trainer_, &QCheckBox::toggled, this, [this](bool on) {
    hf_arguments_->setEnabled(on);
    validateNow();
  });
  connect(hf_arguments_, &QLineEdit::textChanged, this, [this] {
    if (hf_trainer_->isChecked()) debounce_->start();
  });
  layout->addWidget(hf_trainer_);
  layout->addWidget(hf_arguments_, 1);
  rows->addLayout(layout);
  rows->addWidget(hf_status_);
  return box;
}

QWidget* ConfigEditorPage::buildHfFilledTab() {
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  cli_twin_ = new QLabel;
  cli_twin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_twin_->setWordWrap(true);
  cli_twin_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // wraps; never widens the page
  cli_twin_->setToolTip(tr("The same check from a terminal"));
  hf_filled_ = new RowsTableModel({tr("line"), tr("key"), tr("value the Trainer wrote")}, this);
  auto* view = new QTableView;
  view->setModel(hf_filled_);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);  // keys and values whole
  view->horizontalHeader()->setStretchLastSection(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  connect(view, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const int line = hf_filled_->row(index.row()).value(0).toInt();
    if (line > 0) editor_->selectLine(line);
  });
  layout->addWidget(cli_twin_);
  layout->addWidget(view, 1);
  return page;
}

void ConfigEditorPage::setHfTrainer(bool on, const QString& arguments) {
  hf_arguments_->setText(arguments);
  if (hf_trainer_->isChecked() == on)
    validateNow();
  else
    hf_trainer_->setChecked(on);  // validates
}

void ConfigEditorPage::applyHfTrainerOption(configs::ValidateOptions& options) {
  hf_arguments_error_.clear();
  if (!hf_trainer_->isChecked()) return;
  try {
    options.hf_trainer = configs::parse_hf_trainer_arguments(hf_arguments_->text().trimmed().toStdString());
  } catch (const std::invalid_argument& error) {
    hf_arguments_error_ = QString::fromStdString(error.what());  // names the key or value and what is accepted
  }
}

void ConfigEditorPage::showHfTrainerFill() {
  std::vector<QVariantList> rows;
  if (result_.hf_trainer)
    for (const auto& filled : result_.hf_trainer->filled)
      rows.push_back({line_of(result_.resolved, filled.path), QString::fromStdString(filled.path),
                      QString::fromStdString(filled.value.dump())});
  hf_filled_->setRows(std::move(rows));
  cli_twin_->setText(cliTwin());
  hf_status_->setVisible(hf_trainer_->isChecked());
  if (!hf_trainer_->isChecked()) {
    hf_status_->clear();
  } else if (!hf_arguments_error_.isEmpty()) {
    hf_status_->setText(tr("<span style='color:#c81e1e'>%1; validated without the fill</span>")
                            .arg(hf_arguments_error_.toHtmlEscaped()));
  } else if (result_.hf_trainer) {
    const auto mismatches = result_.hf_trainer->mismatches.size();
    hf_status_->setText(tr("%1 filled, %2 mismatch(es)").arg(result_.hf_trainer->filled.size()).arg(mismatches));
  }
}

QString ConfigEditorPage::cliTwin() const {
  std::vector<std::string> args{"validate", file_path_.isEmpty() ? "FILE" : file_path_.toStdString()};
  if (world_size_->value() > 0) args.insert(args.end(), {"--world-size", std::to_string(world_size_->value())});
  if (hf_trainer_->isChecked()) {
    args.push_back("--hf-trainer");
    const std::string arguments = hf_arguments_->text().trimmed().toStdString();
    if (!arguments.empty()) args.push_back(arguments);
  }
  const QString version = deepspeed_version_->currentData().toString();  // "": the CLI's default is the same
  if (!version.isEmpty()) args.insert(args.end(), {"--deepspeed-version", version.toStdString()});
  return QString::fromStdString(shell_command("shardscope", args));
}

}  // namespace shardscope::gui
