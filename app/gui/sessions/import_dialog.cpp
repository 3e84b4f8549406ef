#include "app/gui/sessions/import_dialog.hpp"

#include <algorithm>

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QScreen>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/common/path_field.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

std::optional<std::string> text_of(const QLineEdit* field) {
  const QString text = field->text().trimmed();
  return text.isEmpty() ? std::nullopt : std::optional<std::string>(text.toStdString());
}

// A list with "Add..." and "Remove" (the selected rows) stacked at its right; the list keeps a few
// rows' height, so the form does not spread the dialog's spare height between its rows.
QWidget* list_with_buttons(QWidget* list, QPushButton** add, QPushButton** remove) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* buttons = new QVBoxLayout;
  *add = new QPushButton(QObject::tr("Add\u2026"));
  *remove = new QPushButton(QObject::tr("Remove"));
  buttons->addWidget(*add);
  buttons->addWidget(*remove);
  buttons->addStretch(1);
  layout->addWidget(list, 1);
  layout->addLayout(buttons);
  row->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
  return row;
}

QString html_lines(const std::string& text) {
  return QString::fromStdString(text).toHtmlEscaped().replace("\n", "<br>");
}

}  // namespace

ImportDialog::ImportDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Import a DeepSpeed run"));
  watcher_ = new QFutureWatcher<ImportOutcome>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &ImportDialog::onFinished);
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("Any of the run's files: what they do not say stays unknown. The session is written "
                              "in one transaction; a failed import writes nothing."));
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* form = new QFormLayout;
  addSourceRows(form);
  addLabelRows(form);
  layout->addLayout(form);
  cli_twin_ = new QLabel;
  cli_twin_->setWordWrap(true);
  cli_twin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cli_twin_->setToolTip(tr("The same import from a terminal"));
  cli_twin_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // wraps; never widens the dialog
  layout->addWidget(cli_twin_);
  progress_ = new QProgressBar;
  progress_->setVisible(false);
  layout->addWidget(progress_);
  banner_ = new QLabel;
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  banner_->setFrameShape(QFrame::StyledPanel);
  banner_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_->setVisible(false);
  layout->addWidget(banner_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  import_ = buttons->addButton(tr("Import"), QDialogButtonBox::AcceptRole);
  import_->setDefault(true);
  connect(import_, &QPushButton::clicked, this, &ImportDialog::startImport);
  connect(buttons, &QDialogButtonBox::rejected, this, &ImportDialog::reject);
  layout->addStretch(1);  // spare height goes above the buttons, not between the fields
  layout->addWidget(buttons);
  for (QLineEdit* field : findChildren<QLineEdit*>())
    connect(field, &QLineEdit::textChanged, this, &ImportDialog::updateCliTwin);
  connect(samples_per_step_, &QSpinBox::valueChanged, this, &ImportDialog::updateCliTwin);
  resize(760, sizeHint().height());
  updateCliTwin();
}

ImportDialog::~ImportDialog() {
  cancel_ = true;  // an import still reading stops before it writes
  watcher_->waitForFinished();
}

void ImportDialog::addSourceRows(QFormLayout* form) {
  QWidget* row = nullptr;
  session_file_ = make_path_field(this, PathKind::kSaveFile, tr("The session file to add the run to (created if missing)"),
                                  tr("Session files (*.db *.sqlite *.sessions);;All files (*)"), &row);
  form->addRow(tr("Session file"), row);
  csv_dir_ = make_path_field(this, PathKind::kFolder, tr("csv_monitor's output_path/job_name folder (--csv)"), {}, &row);
  form->addRow(tr("csv_monitor folder"), row);
  tensorboard_dir_ = make_path_field(this, PathKind::kFolder,
                                     tr("tensorboard's output_path/job_name folder, events.out.tfevents.* (--tensorboard)"), {}, &row);
  form->addRow(tr("TensorBoard folder"), row);
  form->addRow(tr("Log files"), buildLogs());
  config_file_ = make_path_field(this, PathKind::kOpenFile, tr("The run's ds_config.json (--config)"),
                                 tr("JSON (*.json);;All files (*)"), &row);
  form->addRow(tr("ds_config.json"), row);
  form->addRow(tr("Traces"), buildTraces());
}

QWidget* ImportDialog::buildLogs() {
  logs_ = new QListWidget;
  logs_->setToolTip(tr("DeepSpeed's console output, or per-rank logs *_rank<R>.log (--log, repeatable)"));
  logs_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  logs_->setMinimumHeight(logs_->fontMetrics().lineSpacing() * 3);
  logs_->setMaximumHeight(logs_->fontMetrics().lineSpacing() * 5);
  QPushButton *add = nullptr, *remove = nullptr;
  QWidget* box = list_with_buttons(logs_, &add, &remove);
  connect(add, &QPushButton::clicked, this, &ImportDialog::addLogs);
  connect(remove, &QPushButton::clicked, this, [this] {
    qDeleteAll(logs_->selectedItems());
    updateCliTwin();
  });
  return box;
}

QWidget* ImportDialog::buildTraces() {
  traces_ = new QTableWidget(0, 2);
  traces_->setHorizontalHeaderLabels({tr("rank"), tr("PyTorch profiler trace (Chrome trace JSON)")});
  traces_->setToolTip(tr("One trace per rank (--trace [RANK=]FILE); leave the rank empty to take it from the "
                         "trace's distributedInfo or its name (rank3)"));
  traces_->verticalHeader()->hide();
  traces_->horizontalHeader()->setStretchLastSection(true);
  traces_->setMinimumHeight(traces_->fontMetrics().lineSpacing() * 5);  // the header and 3 rows
  traces_->setMaximumHeight(traces_->fontMetrics().lineSpacing() * 7);
  QPushButton *add = nullptr, *remove = nullptr;
  QWidget* box = list_with_buttons(traces_, &add, &remove);
  connect(add, &QPushButton::clicked, this, &ImportDialog::addTraces);
  connect(remove, &QPushButton::clicked, this, [this] {
    for (int r = traces_->rowCount() - 1; r >= 0; --r)
      if (traces_->selectionModel()->isRowSelected(r, {})) traces_->removeRow(r);
    updateCliTwin();
  });
  connect(traces_, &QTableWidget::itemChanged, this, &ImportDialog::updateCliTwin);
  return box;
}

void ImportDialog::addLabelRows(QFormLayout* form) {
  name_ = new QLineEdit;
  name_->setPlaceholderText(tr("default: the monitor's job name, else the config's name"));
  tags_ = new QLineEdit;
  tags_->setPlaceholderText(tr("comma-separated, e.g. deepspeed, baseline"));
  samples_per_step_ = new QSpinBox;
  samples_per_step_->setRange(0, 1 << 30);
  samples_per_step_->setSpecialValueText(tr("from the files"));
  samples_per_step_->setToolTip(tr("The run's train_batch_size, when its files do not give it (--samples-per-step)"));
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Tags"), tags_);
  form->addRow(tr("Samples per step"), samples_per_step_);
}

void ImportDialog::addLogs() {
  const QStringList paths = QFileDialog::getOpenFileNames(this, tr("DeepSpeed log files"), {},
                                                          tr("Logs (*.log *.txt *.out);;All files (*)"));
  logs_->addItems(paths);
  updateCliTwin();
}

void ImportDialog::addTraces() {
  const QStringList paths = QFileDialog::getOpenFileNames(this, tr("PyTorch profiler traces"), {},
                                                          tr("Chrome traces (*.json *.json.gz);;All files (*)"));
  for (const QString& path : paths) {
    const int row = traces_->rowCount();
    traces_->insertRow(row);
    traces_->setItem(row, 0, new QTableWidgetItem);
    traces_->setItem(row, 1, new QTableWidgetItem(path));
  }
  updateCliTwin();
}

void ImportDialog::setSessionFile(const QString& path) { session_file_->setText(path); }

QString ImportDialog::sessionFile() const { return session_file_->text().trimmed(); }

void ImportDialog::setRequest(const ImportRequest& r) {
  session_file_->setText(QString::fromStdString(r.session_file));
  csv_dir_->setText(QString::fromStdString(r.sources.csv_monitor_dir.value_or("")));
  tensorboard_dir_->setText(QString::fromStdString(r.sources.tensorboard_dir.value_or("")));
  config_file_->setText(QString::fromStdString(r.sources.config_file.value_or("")));
  logs_->clear();
  for (const auto& log : r.sources.log_files) logs_->addItem(QString::fromStdString(log));
  traces_->setRowCount(0);
  for (const auto& t : r.sources.traces) {
    const int row = traces_->rowCount();
    traces_->insertRow(row);
    traces_->setItem(row, 0, new QTableWidgetItem(t.rank ? QString::number(*t.rank) : QString()));
    traces_->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(t.path)));
  }
  name_->setText(QString::fromStdString(r.name));
  QStringList tags;
  for (const auto& tag : r.tags) tags << QString::fromStdString(tag);
  tags_->setText(tags.join(", "));
  samples_per_step_->setValue(static_cast<int>(r.samples_per_step.value_or(0)));
  updateCliTwin();
}

ImportRequest ImportDialog::request(QString* error) const {
  ImportRequest r;
  error->clear();
  r.session_file = session_file_->text().trimmed().toStdString();
  r.sources.csv_monitor_dir = text_of(csv_dir_);
  r.sources.tensorboard_dir = text_of(tensorboard_dir_);
  r.sources.config_file = text_of(config_file_);
  for (int i = 0; i < logs_->count(); ++i) r.sources.log_files.push_back(logs_->item(i)->text().toStdString());
  for (int row = 0; row < traces_->rowCount(); ++row) {
    const QString rank = traces_->item(row, 0) ? traces_->item(row, 0)->text().trimmed() : QString();
    const QString path = traces_->item(row, 1) ? traces_->item(row, 1)->text().trimmed() : QString();
    bool number = true;
    const int value = rank.toInt(&number);
    if (!rank.isEmpty() && (!number || value < 0))
      *error = tr("Traces, row %1: rank '%2' is not a rank number; leave it empty to take the trace's own").arg(row + 1).arg(rank);
    ss::TraceFile trace{rank.isEmpty() ? std::nullopt : std::optional<int>(value), path.toStdString()};
    if (!path.isEmpty()) r.sources.traces.push_back(std::move(trace));
  }
  r.name = name_->text().trimmed().toStdString();
  for (const QString& tag : tags_->text().split(',', Qt::SkipEmptyParts))
    if (!tag.trimmed().isEmpty()) r.tags.push_back(tag.trimmed().toStdString());
  if (samples_per_step_->value() > 0) r.samples_per_step = samples_per_step_->value();
  if (error->isEmpty() && r.session_file.empty()) *error = tr("Choose the session file to import into.");
  const auto& s = r.sources;
  if (error->isEmpty() && !s.csv_monitor_dir && !s.tensorboard_dir && s.log_files.empty() && !s.config_file && s.traces.empty())
    *error = tr("Give at least one of the run's files: a csv_monitor or TensorBoard folder, a log, "
                "ds_config.json or a trace.");
  return r;
}

void ImportDialog::updateCliTwin() {
  QString error;
  const ImportRequest r = request(&error);
  cli_twin_->setText(tr("CLI: %1").arg(QString::fromStdString(shell_command("shardscope", import_arguments(r))).toHtmlEscaped()));
  growToFit();
}

void ImportDialog::startImport() {
  if (isImporting()) return;
  QString error;
  const ImportRequest r = request(&error);
  banner_->setVisible(true);
  if (!error.isEmpty()) {
    outcome_ = ImportOutcome{};
    outcome_.error = error.toStdString();
    banner_->setText(tr("<b>Cannot import:</b> %1").arg(error.toHtmlEscaped()));
    growToFit();
    emit importFinished(false);
    return;
  }
  cancel_ = false;
  setBusy(true);
  banner_->setText(tr("Reading the run's files\u2026"));
  growToFit();
  auto progress = [this](const ss::ImportProgress& p) {
    QMetaObject::invokeMethod(this, [this, p] { onProgress(p); }, Qt::QueuedConnection);
  };
  watcher_->setFuture(QtConcurrent::run([r, progress, this] { return run_import(r, progress, &cancel_); }));
}

void ImportDialog::onProgress(const ss::ImportProgress& p) {
  const ImportProgressBar bar = import_progress_bar(p);
  progress_->setRange(0, bar.maximum);
  progress_->setValue(bar.value);
  progress_->setFormat(QString::fromStdString(bar.text));
}

void ImportDialog::onFinished() {
  outcome_ = watcher_->result();
  setBusy(false);
  if (outcome_.ok) {
    banner_->setText(tr("<b>Imported</b> into %1:<br>%2")
                         .arg(session_file_->text().toHtmlEscaped(), html_lines(ss::import_result_text(outcome_.result))));
    emit imported(QFileInfo(session_file_->text().trimmed()).absoluteFilePath(),
                  QString::fromStdString(outcome_.result.session_uid));
  } else {
    banner_->setText(tr("<b>Not imported</b> (nothing was written): %1").arg(html_lines(outcome_.error)));
  }
  growToFit();
  emit importFinished(outcome_.ok);
}

void ImportDialog::growToFit() {
  // Wrapped labels (the CLI twin, the banner) need more height as they grow; the layout's minimum
  // does not follow them, so the dialog grows itself rather than squeezing the lists.
  int needed = layout()->totalHeightForWidth(width());
  if (screen()) needed = std::min(needed, screen()->availableGeometry().height() - 48);  // title bar room
  if (needed > height()) resize(width(), needed);
}

void ImportDialog::setBusy(bool busy) {
  import_->setEnabled(!busy);
  progress_->setVisible(busy);
  if (busy) progress_->setRange(0, 0);  // busy until the first stage reports
}

QString ImportDialog::bannerText() const { return banner_->text(); }

void ImportDialog::reject() {
  // Closing while an import reads its files cancels it (the library stops before writing).
  if (isImporting()) {
    cancel_ = true;
    banner_->setText(tr("Cancelling\u2026"));
    return;
  }
  QDialog::reject();
}

}  // namespace shardscope::gui
