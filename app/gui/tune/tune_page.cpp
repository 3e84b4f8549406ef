#include "app/gui/tune/tune_page.hpp"

#include <QComboBox>
#include <QDateTime>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/tune/tune_poller.hpp"
#include "app/gui/tune/tune_runner.hpp"
#include "app/gui/tune/tune_trials_model.hpp"

namespace shardscope::gui {

TunePage::TunePage(QWidget* parent) : QWidget(parent) {
  model_ = new TuneTrialsModel(this);
  runner_ = new TuneRunner(this);
  poller_ = new TunePoller(this);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  auto* form_scroll = new QScrollArea;
  form_scroll->setWidgetResizable(true);
  form_scroll->setWidget(buildForm());
  form_scroll->setMinimumWidth(300);
  splitter->addWidget(form_scroll);
  splitter->addWidget(buildResults());
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(splitter);
  connect(runner_, &TuneRunner::lineReceived, output_, &QPlainTextEdit::appendPlainText);
  connect(runner_, &TuneRunner::runAnnounced, this, &TunePage::onRunAnnounced);
  connect(runner_, &TuneRunner::finished, this, &TunePage::onFinished);
  connect(poller_, &TunePoller::updated, this, &TunePage::onProgress);
  restoreSettings();
  updateCliTwin();
  updateSpacePreview();
  updateActions();
  reloadRuns();
  // The last run of the database shows again at the next start (read on the poller's thread).
  if (runs_->count() > 0) showRun(db_->text(), runs_->itemData(0).toString());
}

TunePage::~TunePage() { runner_->stopAndWait(); }

QWidget* TunePage::buildResultsToolbar() {
  auto* bar = new QWidget;
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(new QLabel(tr("Run:")));
  runs_ = new QComboBox;
  runs_->setToolTip(tr("The tune runs of the session database (--db), newest first"));
  runs_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  runs_->setMinimumContentsLength(16);
  row->addWidget(runs_, 1);
  connect(runs_, &QComboBox::activated, this, [this](int i) { showRun(db_->text(), runs_->itemData(i).toString()); });
  open_best_ = new QPushButton(tr("Open best config"));
  open_best_->setToolTip(tr("Open the best trial's ds_config.json in the Config Editor"));
  connect(open_best_, &QPushButton::clicked, this, &TunePage::openBestConfig);
  compare_ = new QPushButton(tr("Compare 2 selected"));
  compare_->setToolTip(tr("Compare the sessions of the two trials selected in the table (Ctrl+click) in "
                          "Sessions & Compare; the first is the baseline"));
  connect(compare_, &QPushButton::clicked, this, &TunePage::compareSelected);
  row->addWidget(open_best_);
  row->addWidget(compare_);
  return bar;
}

QWidget* TunePage::buildResults() {
  auto* side = new QWidget;
  auto* layout = new QVBoxLayout(side);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(buildResultsToolbar());
  summary_ = new QLabel(tr("No tune run yet: set the space and press Start."));
  summary_->setWordWrap(true);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_ = new QLabel;
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::PlainText);
  banner_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_->hide();
  layout->addWidget(summary_);
  layout->addWidget(banner_);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  add_table_export_menu(table_, tr("tune trials"), [this](const QString& m) { emit statusMessage(m); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &TunePage::updateActions);
  scatter_ = new QCustomPlot;
  scatter_->setMinimumHeight(220);
  setup_tune_scatter(scatter_);
  view_ = build_tune_view({});  // an empty run: the axes titled, the metric column named
  model_->setRows({}, QString::fromStdString(view_.metric_header));
  scatter_index_ = draw_tune_scatter(scatter_, view_);
  scatter_->setMouseTracking(true);
  add_plot_export_menu(scatter_, tr("tune scatter"), [this](const QString& m) { emit statusMessage(m); });
  connect(scatter_, &QCustomPlot::mousePress, this, &TunePage::onScatterClick);
  connect(scatter_, &QCustomPlot::mouseMove, this, &TunePage::onScatterHover);
  output_ = new QPlainTextEdit;
  output_->setReadOnly(true);
  output_->setMaximumBlockCount(5000);
  output_->setPlaceholderText(tr("The tuner's output (each trial's own log is in the output folder's exps/)"));
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(scatter_);
  split->addWidget(output_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 4);
  split->setStretchFactor(2, 1);
  layout->addWidget(split, 1);
  return side;
}

void TunePage::updateCliTwin() {
  if (!cli_twin_ || restoring_) return;
  try {
    cli_twin_->setText(QString::fromStdString(shell_command("shardscope", tune_arguments(spec()))));
  } catch (const std::exception& e) {
    cli_twin_->setText(tr("<i>%1</i>").arg(QString::fromStdString(e.what()).toHtmlEscaped()));
  }
}

bool TunePage::isRunning() const { return runner_->isRunning(); }

void TunePage::start() {
  std::vector<std::string> args;
  try {
    running_ = spec();
    args = tune_arguments(running_);
  } catch (const std::exception& e) {
    showBanner(QString::fromStdString(e.what()), true);
    return;
  }
  saveSettings();
  output_->clear();
  banner_->hide();
  poller_->stop();
  shown_db_ = QString::fromStdString(running_.db);
  QStringList qargs;
  for (const auto& a : args) qargs << QString::fromStdString(a);
  const QString program = shardscope_cli_path();
  if (!runner_->start(program, qargs)) {
    showBanner(cli_missing_message(program, runner_->errorText()), true);
    return;
  }
  summary_->setText(tr("Starting the tuner\u2026"));
  updateActions();
  emit runStarted();
  emit statusMessage(tr("Tuning %1").arg(QString::fromStdString(running_.config_path)));
}

void TunePage::stop() {
  if (!runner_->isRunning()) return;
  summary_->setText(tr("Stopping: the running trial and its ranks get SIGTERM\u2026"));
  runner_->stop();
}

void TunePage::shutdown() {
  poller_->stop();
  runner_->stopAndWait();
}

QString TunePage::runDescription() const {
  return tr("Tuning %1 into %2: %3")
      .arg(QFileInfo(QString::fromStdString(running_.config_path)).fileName(), QString::fromStdString(running_.db),
           QString::fromStdString(view_.summary.empty() ? std::string("starting") : view_.summary));
}

void TunePage::onRunAnnounced(const QString& uid) { poller_->follow(shown_db_, uid); }

void TunePage::onFinished(int exit_code, bool stopped) {
  poller_->finish();
  updateActions();
  reloadRuns();
  if (stopped)
    showBanner(tr("Stopped: the tuner ended its running trial and every rank (exit code %1); Resume runs that trial "
                  "again.").arg(exit_code), false);
  else if (exit_code == 1)
    showBanner(tr("No trial ran to the end (exit code 1): the table's notes say why each one stopped."), true);
  else if (exit_code != 0)
    showBanner(tr("The tuner failed (exit code %1): %2")
                   .arg(exit_code)
                   .arg(output_->toPlainText().section('\n', -3).trimmed()), true);
  emit runFinished(exit_code);
}

void TunePage::onProgress(const TuneProgress& progress) {
  if (!progress.error.empty()) {
    showBanner(QString::fromStdString(progress.error), true);
    return;
  }
  last_progress_ = progress;
  view_ = build_tune_view(progress);
  model_->setRows(view_.rows, QString::fromStdString(view_.metric_header));
  scatter_index_ = draw_tune_scatter(scatter_, view_);
  summary_->setText(view_.run_uid.empty()
                        ? tr("No tune run in %1 yet.").arg(shown_db_)
                        : tr("Run %1 (%2): %3")
                              .arg(QString::fromStdString(view_.run_uid), QString::fromStdString(view_.run_status),
                                   QString::fromStdString(view_.summary)));
  table_->resizeColumnsToContents();
  if (view_.best && progress.run && progress.run->status != "running") table_->scrollTo(model_->index(int(*view_.best), 0));
  updateActions();
}

void TunePage::showRun(const QString& db, const QString& uid) {
  if (runner_->isRunning()) return;  // the running tuner's run stays shown
  shown_db_ = db;
  running_ = spec();
  banner_->hide();
  poller_->follow(db, uid);
  poller_->finish();  // a stored run: one read (a run another tuner is writing: Reload reads again)
}

void TunePage::reloadRuns() {
  runs_->clear();
  for (const auto& run : list_tune_runs(db_->text().toStdString()))
    runs_->addItem(tr("%1  %2  (%3)")
                       .arg(QString::fromStdString(run.uid).left(8),
                            QDateTime::fromSecsSinceEpoch(static_cast<qint64>(run.created_at)).toString("yyyy-MM-dd hh:mm"),
                            QString::fromStdString(run.status)),
                   QString::fromStdString(run.uid));
}

void TunePage::updateActions() {
  const bool running = runner_->isRunning();
  start_->setEnabled(!running);
  stop_->setEnabled(running);
  runs_->setEnabled(!running);
  open_best_->setEnabled(view_.best.has_value());
  compare_->setEnabled(selected_rows(table_).size() == 2);
}

void TunePage::selectTrials(const QList<int>& rows) {
  table_->clearSelection();
  for (int r : rows)
    table_->selectionModel()->select(model_->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

QString TunePage::bestConfigPath() const {
  if (!view_.best) return {};
  const TrialRow& best = view_.rows[*view_.best];
  std::vector<std::string> paths;
  if (view_.run_status != "running") paths.push_back(running_.out_dir + "/ds_config.json");
  paths.push_back(trial_config_path(running_, best.trial));
  return QString::fromStdString(matching_config_path(last_progress_, *view_.best, paths));
}

void TunePage::openBestConfig() {
  if (!view_.best) return;
  const QString path = bestConfigPath();
  if (path.isEmpty()) {
    emit statusMessage(tr("The best trial's config is not in %1 any more (a later run replaced it): run `shardscope tune "
                          "--resume` with the same flags to write it again")
                           .arg(QString::fromStdString(running_.out_dir)));
    return;
  }
  emit openConfig(path);
}

void TunePage::compareSelected() {
  std::vector<TrialRow> rows;
  for (int r : selected_rows(table_)) rows.push_back(model_->row(r));
  if (rows.size() != 2) {
    emit statusMessage(tr("Select two trials to compare (%1 selected)").arg(rows.size()));
    return;
  }
  try {
    emit compareTrials(trial_session_refs(shown_db_.toStdString(), rows));
  } catch (const std::exception& e) {
    emit statusMessage(QString::fromStdString(e.what()));
  }
}

void TunePage::onScatterClick(QMouseEvent* event) {
  const int row = scatter_row_at(scatter_, scatter_index_, event->position());
  if (row < 0) return;
  if (event->modifiers() & Qt::ControlModifier)
    table_->selectionModel()->select(model_->index(row, 0), QItemSelectionModel::Toggle | QItemSelectionModel::Rows);
  else
    selectTrials({row});
  table_->scrollTo(model_->index(row, 0));
}

void TunePage::onScatterHover(QMouseEvent* event) {
  const int row = scatter_row_at(scatter_, scatter_index_, event->position());
  if (row < 0) {
    QToolTip::hideText();
    return;
  }
  const TrialRow& r = model_->row(row);
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("trial %1 (%2): %3\npredicted %4, measured peak %5")
                         .arg(r.trial)
                         .arg(QString::fromStdString(r.name), QString::fromStdString(r.status),
                              QString::fromStdString(trial_bytes_text(r.predicted_bytes)),
                              QString::fromStdString(trial_bytes_text(r.peak_bytes))),
                     scatter_);
}

void TunePage::showBanner(const QString& text, bool error) {
  banner_->setText(text);
  banner_->setStyleSheet(error ? "QLabel { background: #fde2e1; color: #8b1a1a; padding: 4px; }"
                               : "QLabel { background: #eef4e8; color: #2b4a1a; padding: 4px; }");
  banner_->show();
}

}  // namespace shardscope::gui
