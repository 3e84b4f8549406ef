#include "app/gui/config_editor/config_editor_page.hpp"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/gui/common/code_editor.hpp"
#include "app/gui/config_editor/config_editor_models.hpp"
#include "app/gui/config_editor/config_form.hpp"
#include "app/gui/config_editor/config_form_fields.hpp"
#include "app/gui/common/json_highlighter.hpp"
#include "app/gui/common/wheel_guard.hpp"
#include "configs/config_document.hpp"

namespace shardscope::gui {

ConfigEditorPage::ConfigEditorPage(QWidget* parent) : QWidget(parent) {
  editor_ = new CodeEditor;
  new JsonHighlighter(editor_->document());
  editor_->setToolTip(tr("DeepSpeed config (JSON; comments allowed as DeepSpeed's hjson reader allows them)"));
  form_ = new ConfigForm;
  diagnostics_ = new DiagnosticsModel(this);
  resolved_ = new ResolvedModel(this);
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, &ConfigEditorPage::validateNow);
  connect(editor_, &QPlainTextEdit::textChanged, this, &ConfigEditorPage::onTextChanged);
  connect(editor_->document(), &QTextDocument::modificationChanged, this, &ConfigEditorPage::updateTitle);
  connect(form_, &ConfigForm::fieldEdited, this, &ConfigEditorPage::onFormEdited);
  buildActions();

  QToolBar* toolbar = buildToolbar();
  file_label_ = new QLabel;

  auto* form_scroll = new QScrollArea;
  form_scroll->setWidget(form_);
  scroll_wheel_past_unfocused_fields(form_);
  form_scroll->setWidgetResizable(true);
  form_scroll->setMinimumWidth(300);
  auto* top = new QSplitter;
  top->addWidget(editor_);
  top->addWidget(form_scroll);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  auto* vertical = new QSplitter(Qt::Vertical);
  vertical->addWidget(top);
  vertical->addWidget(buildBottomTabs());
  vertical->setStretchFactor(0, 3);
  vertical->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(toolbar);
  layout->addWidget(buildHfTrainerRow());
  layout->addWidget(file_label_);
  layout->addWidget(vertical, 1);
  newFromTemplate("zero2_bf16");
  editor_->document()->setModified(false);
  updateTitle();
}

QToolBar* ConfigEditorPage::buildToolbar() {
  auto* toolbar = new QToolBar;
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* new_button = new QToolButton;
  new_button->setText(tr("New from template"));
  new_button->setMenu(template_menu_);
  new_button->setPopupMode(QToolButton::InstantPopup);
  toolbar->addWidget(new_button);
  toolbar->addAction(open_);
  auto* recent_button = new QToolButton;
  recent_button->setText(tr("Recent"));
  recent_button->setMenu(recent_menu_);
  recent_button->setPopupMode(QToolButton::InstantPopup);
  toolbar->addWidget(recent_button);
  toolbar->addActions({save_, save_as_});
  toolbar->addSeparator();
  toolbar->addActions({undo_, redo_});
  toolbar->addSeparator();
  toolbar->addWidget(new QLabel(tr(" World size ")));
  world_size_ = new QSpinBox;
  world_size_->setRange(0, 1 << 20);
  world_size_->setSpecialValueText(tr("infer"));
  world_size_->setToolTip(tr("Data-parallel ranks for the batch identity train_batch_size = "
                             "micro-batch x gradient_accumulation_steps x world size (--world-size)"));
  connect(world_size_, &QSpinBox::valueChanged, this, &ConfigEditorPage::validateNow);
  toolbar->addWidget(world_size_);
  toolbar->addWidget(new QLabel(tr(" Rules of ")));
  toolbar->addWidget(buildDeepSpeedVersionBox());
  return toolbar;
}

// The releases ShardScope has rules for, and the one installed in the active Python (read from its
// dist-info, as the CLI's default is), chosen at first: the GUI and `shardscope validate` agree.
QWidget* ConfigEditorPage::buildDeepSpeedVersionBox() {
  deepspeed_version_ = new QComboBox;
  const auto installed = configs::find_installed_deepspeed();
  rules_ = configs::choose_deepspeed_rules(std::nullopt);
  const QString found = !installed || installed->version.empty()
                            ? tr("none, so %1").arg(configs::to_string(rules_.version))
                            : QString::fromStdString(installed->version);
  deepspeed_version_->addItem(tr("installed DeepSpeed (%1)").arg(found), QString());
  for (const auto version : {configs::DeepSpeedVersion::k0_19_7, configs::DeepSpeedVersion::k0_19_8})
    deepspeed_version_->addItem(tr("DeepSpeed %1").arg(configs::to_string(version)),
                                QString::fromLatin1(configs::to_string(version)));
  deepspeed_version_->setToolTip(QString::fromStdString(rules_.describe()));
  connect(deepspeed_version_, &QComboBox::currentIndexChanged, this, &ConfigEditorPage::onDeepSpeedVersionChosen);
  return deepspeed_version_;
}

void ConfigEditorPage::onDeepSpeedVersionChosen() {
  const QString chosen = deepspeed_version_->currentData().toString();
  rules_ = configs::choose_deepspeed_rules(chosen.isEmpty() ? std::nullopt
                                                            : std::optional<std::string>(chosen.toStdString()));
  deepspeed_version_->setToolTip(QString::fromStdString(rules_.describe()));
  validateNow();
}

void ConfigEditorPage::setDeepSpeedVersion(std::optional<configs::DeepSpeedVersion> version) {
  const QString data = version ? QString::fromLatin1(configs::to_string(*version)) : QString();
  const int index = deepspeed_version_->findData(data);
  if (index == deepspeed_version_->currentIndex())
    onDeepSpeedVersionChosen();
  else
    deepspeed_version_->setCurrentIndex(index);  // validates
}

QWidget* ConfigEditorPage::buildBottomTabs() {
  auto* tabs = new QTabWidget;
  auto* diag_page = new QWidget;
  auto* diag_layout = new QVBoxLayout(diag_page);
  summary_ = new QLabel;
  diagnostics_view_ = new QTableView;
  diagnostics_view_->setModel(diagnostics_);
  diagnostics_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  diagnostics_view_->verticalHeader()->hide();
  diagnostics_view_->horizontalHeader()->setSectionResizeMode(DiagnosticsModel::kMessage, QHeaderView::Stretch);
  diagnostics_view_->horizontalHeader()->setSectionResizeMode(DiagnosticsModel::kHint, QHeaderView::Stretch);
  diagnostics_view_->setWordWrap(true);
  // A row is as tall as its wrapped message: a mismatch names its keys at the message's end.
  diagnostics_view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Clicking a diagnostic selects the line it points at.
  connect(diagnostics_view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const int line = diagnostics_->data(index, Qt::UserRole).toInt();
    if (line > 0) editor_->selectLine(line);
  });
  diag_layout->addWidget(summary_);
  diag_layout->addWidget(diagnostics_view_);
  tabs->addTab(diag_page, tr("Diagnostics"));

  auto* resolved_page = new QWidget;
  auto* resolved_layout = new QVBoxLayout(resolved_page);
  only_non_default_ = new QCheckBox(tr("Show only non-default keys"));
  connect(only_non_default_, &QCheckBox::toggled, resolved_, &ResolvedModel::setOnlyNonDefault);
  auto* resolved_view = new QTableView;
  resolved_view->setModel(resolved_);
  resolved_view->verticalHeader()->hide();
  resolved_view->horizontalHeader()->setStretchLastSection(true);
  connect(resolved_view, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const int line = resolved_->data(index, Qt::UserRole).toInt();
    if (line > 0) editor_->selectLine(line);
  });
  resolved_layout->addWidget(only_non_default_);
  resolved_layout->addWidget(resolved_view);
  tabs->addTab(resolved_page, tr("Resolved config"));
  tabs->addTab(buildHfFilledTab(), tr("Trainer fill"));

  diff_ = new QPlainTextEdit;
  diff_->setReadOnly(true);
  diff_->setFont(editor_->font());
  tabs->addTab(diff_, tr("Diff against disk"));
  connect(tabs, &QTabWidget::currentChanged, this, &ConfigEditorPage::updateDiff);
  return tabs;
}

void ConfigEditorPage::onTextChanged() {
  debounce_->start();
  // A form edit already knows its values; re-reading them would fight the field being typed in.
  if (!applying_form_) syncFormFromText();
}

void ConfigEditorPage::syncFormFromText() {
  std::string error;
  const auto values = read_form_values(editor_->toPlainText().toStdString(), &error);
  form_->setParseError(values ? QString() : QString::fromStdString(error));
  if (values) form_->setValues(*values);
}

void ConfigEditorPage::onFormEdited(const QString& path, const QString& value_json) {
  try {
    const std::string text =
        apply_form_value(editor_->toPlainText().toStdString(), path.toStdString(), value_json.toStdString());
    applying_form_ = true;
    editor_->replaceTextUndoable(QString::fromStdString(text));
    applying_form_ = false;
    emit statusMessage(tr("Set %1").arg(path));
  } catch (const std::exception& e) {
    applying_form_ = false;
    emit statusMessage(QString::fromStdString(e.what()));
  }
}

void ConfigEditorPage::validateNow() {
  debounce_->stop();
  const QString name = file_path_.isEmpty() ? tr("untitled.json") : file_path_;
  const configs::ConfigDocument document =
      configs::parse_config_text(editor_->toPlainText().toStdString(), name.toStdString());
  configs::ValidateOptions options;
  if (world_size_->value() > 0) options.world_size = world_size_->value();
  options.deepspeed_version = rules_.version;
  applyHfTrainerOption(options);
  result_ = configs::validate(document, options);
  showDiagnostics();
  showHfTrainerFill();
  emit validated();
}

void ConfigEditorPage::showDiagnostics() {
  diagnostics_->setDiagnostics(result_.diagnostics);
  resolved_->setResolved(result_.resolved);
  std::vector<CodeEditor::Mark> marks;
  for (const auto& d : result_.diagnostics)
    if (d.location.line > 0 && d.severity != configs::Severity::kNote)
      marks.push_back({d.location.line, d.severity == configs::Severity::kError, QString::fromStdString(d.message)});
  editor_->setMarks(std::move(marks));
  const auto errors = configs::count_severity(result_.diagnostics, configs::Severity::kError);
  const auto warnings = configs::count_severity(result_.diagnostics, configs::Severity::kWarning);
  const char* version = configs::to_string(rules_.version);
  summary_->setText(errors + warnings == 0
                        ? tr("No errors or warnings: DeepSpeed %1 accepts this config.").arg(version)
                        : tr("%1 error(s), %2 warning(s) under DeepSpeed %3's rules")
                              .arg(errors)
                              .arg(warnings)
                              .arg(version));
  updateDiff();
}

void ConfigEditorPage::updateDiff() {
  if (file_path_.isEmpty()) {
    diff_->setPlainText(tr("Not saved yet: nothing on disk to compare with."));
    return;
  }
  const std::string diff = line_diff(disk_text_.toStdString(), editor_->toPlainText().toStdString());
  diff_->setPlainText(diff.empty() ? tr("No changes against %1").arg(file_path_) : QString::fromStdString(diff));
}

void ConfigEditorPage::setWorldSize(int world_size) { world_size_->setValue(world_size); }

}  // namespace shardscope::gui
