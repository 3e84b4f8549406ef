// The Sessions & Compare page's Verdict and Trend tabs: `sessions check` on the compared sessions
// (each metric's verdict with its interval, what moved, what changed) and `sessions trend` of a
// metric over the file's sessions. The library computes, verdict_data.hpp lays out, this draws.
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/common/gui_export.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/sessions/verdict_charts.hpp"
#include "app/gui/sessions/verdict_models.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

QTableView* make_verdict_table(TextTableModel* model) {
  auto* view = new QTableView;
  view->setModel(model);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setStretchLastSection(true);
  view->horizontalHeader()->setMaximumSectionSize(420);  // a long kernel name elides, its tooltip whole
  view->setTextElideMode(Qt::ElideMiddle);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setWordWrap(false);
  return view;
}

QLabel* make_wrapping_label(const QString& name) {
  auto* label = new QLabel;
  label->setObjectName(name);
  label->setWordWrap(true);
  label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return label;
}

QLabel* make_cli_label(const QString& name) {
  QLabel* label = make_wrapping_label(name);
  label->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return label;
}

QString joined(const std::vector<std::string>& lines) {
  QStringList out;
  for (const auto& l : lines) out << QString::fromStdString(l).toHtmlEscaped();
  return out.join("<br>");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (const QString& line : QString::fromStdString(text).split('\n')) out.push_back(line.toStdString());
  return out;
}

void show_pane(ProfileView* view, const std::string& pane) {
  QTabWidget* panes = view->panes();
  for (int i = 0; i < panes->count(); ++i)
    if (panes->tabText(i).remove('&') == QString::fromStdString(pane)) panes->setCurrentIndex(i);
}

}  // namespace

QWidget* SessionsPage::buildVerdictTab() {
  verdict_model_ = new TextTableModel(this);
  verdict_model_->setToneColumn(6);
  contributors_model_ = new TextTableModel(this);
  changes_model_ = new TextTableModel(this);
  changes_model_->setToneColumn(0);
  verdict_watcher_ = new QFutureWatcher<VerdictView>(this);
  connect(verdict_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::onVerdictReady);
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  layout->addWidget(buildVerdictControls());
  verdict_headline_ = make_wrapping_label("verdict_headline");
  verdict_headline_->setText(tr("Compare 2 sessions or more: the first is the baseline."));
  verdict_cli_ = make_cli_label("verdict_cli");
  verdict_notes_ = make_wrapping_label("verdict_notes");
  verdict_notes_->setVisible(false);
  layout->addWidget(verdict_headline_);
  layout->addWidget(verdict_cli_);
  layout->addWidget(verdict_notes_);
  layout->addWidget(buildVerdictTables(), 1);
  return tab;
}

QWidget* SessionsPage::buildVerdictControls() {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  verdict_groups_ = new QComboBox;
  verdict_groups_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  verdict_groups_->setMinimumContentsLength(28);
  verdict_groups_->setToolTip(tr("The candidate against the baseline (the first compared session), or repeats of two configs"));
  connect(verdict_groups_, &QComboBox::activated, this, [this](int i) { setVerdictGroups(i); });
  fail_on_ = new QLineEdit;
  fail_on_->setPlaceholderText(tr("--fail-on, e.g. step_time:+3%,peak_memory:+2% (empty: the documented defaults)"));
  fail_on_->setToolTip(tr("Thresholds as `sessions check --fail-on` takes them; only the listed metrics gate"));
  connect(fail_on_, &QLineEdit::editingFinished, this, &SessionsPage::runVerdict);
  layout->addWidget(new QLabel(tr("Candidate")));
  layout->addWidget(verdict_groups_, 2);
  layout->addWidget(new QLabel(tr("Fail on")));
  layout->addWidget(fail_on_, 3);
  return row;
}

QWidget* SessionsPage::buildVerdictTables() {
  auto* metrics = make_verdict_table(verdict_model_);
  metrics->setToolTip(tr("Each metric's change with its 95% interval (two-level circular block bootstrap, docs/sessions.md)"));
  add_table_export_menu(metrics, "verdicts", [this](const QString& m) { emit statusMessage(m); });
  verdict_chart_ = new QCustomPlot;
  verdict_chart_->setMinimumSize(220, 160);
  add_plot_export_menu(verdict_chart_, "verdict_intervals", [this](const QString& m) { emit statusMessage(m); });
  auto* top = new QSplitter(Qt::Horizontal);
  top->addWidget(metrics);
  top->addWidget(verdict_chart_);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  contributors_view_ = make_verdict_table(contributors_model_);
  contributors_view_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(contributors_view_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) { openContributor(i.row()); });
  connect(contributors_view_, &QWidget::customContextMenuRequested, this, &SessionsPage::showContributorMenu);
  contributors_note_ = make_wrapping_label("contributors_note");
  auto* moved = new QWidget;
  auto* moved_layout = new QVBoxLayout(moved);
  moved_layout->setContentsMargins(0, 0, 0, 0);
  moved_layout->addWidget(contributors_note_);
  moved_layout->addWidget(contributors_view_, 1);
  auto* changes = make_verdict_table(changes_model_);
  add_table_export_menu(changes, "what_changed", [this](const QString& m) { emit statusMessage(m); });
  auto* below = new QTabWidget;
  below->addTab(moved, tr("What moved"));
  below->addTab(changes, tr("What changed"));
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(below);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  return split;
}

void SessionsPage::updateVerdictChoices() {
  std::vector<std::string> hashes;
  for (const auto& s : comparison_.summaries) hashes.push_back(s.info.config_hash);
  verdict_choices_ = verdict_group_choices(comparison_.sessions, hashes);
  verdict_groups_->clear();
  for (const auto& c : verdict_choices_) verdict_groups_->addItem(QString::fromStdString(c.label));
}

void SessionsPage::setVerdictGroups(int choice) {
  if (choice < 0 || choice >= verdict_groups_->count()) return;
  verdict_groups_->setCurrentIndex(choice);
  runVerdict();
}

void SessionsPage::setFailOn(const QString& text) {
  fail_on_->setText(text);
  runVerdict();
}

void SessionsPage::runVerdict() {
  const int choice = verdict_groups_->currentIndex();
  if (choice < 0 || static_cast<std::size_t>(choice) >= verdict_choices_.size()) return;
  if (verdict_watcher_->isRunning()) {
    verdict_pending_ = true;
    return;
  }
  VerdictRequest request;
  for (auto i : verdict_choices_[static_cast<std::size_t>(choice)].baseline) request.baseline.push_back(comparison_.sessions[i]);
  for (auto i : verdict_choices_[static_cast<std::size_t>(choice)].candidate) request.candidate.push_back(comparison_.sessions[i]);
  request.fail_on = fail_on_->text().trimmed().toStdString();
  // The page's warm-up box when set; 0 leaves the check's own default (max(2, 10 %) of each run).
  if (warmup_->value() > 0) request.warmup_steps = warmup_->value();
  verdict_headline_->setText(tr("Checking\u2026"));
  verdict_cli_->setText(QString::fromStdString(verdict_cli_command(request)));
  verdict_watcher_->setFuture(QtConcurrent::run([request] { return compute_verdict(request); }));
}

void SessionsPage::onVerdictReady() {
  verdict_ = verdict_watcher_->result();
  if (verdict_pending_) {
    verdict_pending_ = false;
    return runVerdict();
  }
  verdict_cli_->setText(QString::fromStdString(verdict_.cli));
  verdict_model_->setTable(verdict_.metrics);
  contributors_model_->setTable(verdict_.contributors);
  changes_model_->setTable(verdict_.changes);
  if (!verdict_.error.empty()) {
    verdict_headline_->setText(tr("<b>No verdict:</b> %1").arg(QString::fromStdString(verdict_.error).toHtmlEscaped()));
    verdict_notes_->setVisible(false);
    contributors_note_->clear();
    draw_verdict_intervals(verdict_chart_, {});
    emit verdictReady();
    return;
  }
  const bool failed = verdict_.report.failed;
  verdict_headline_->setText(QString("<b style='color:%1'>%2</b>")
                                 .arg(tone_color(failed ? RowTone::kRegression : RowTone::kImprovement).name(),
                                      joined(lines_of(verdict_.headline))));
  verdict_notes_->setText(tr("Notes: %1").arg(joined(verdict_.report.notes)));
  verdict_notes_->setVisible(!verdict_.report.notes.empty());
  contributors_note_->setText(verdict_.report.profiled
                                  ? tr("Kernel families, collectives and phases by how much their time per step moved. "
                                       "Double-click a row for the candidate's profile narrowed to it (right-click: the baseline's).")
                                  : tr("Collectives and phases only: kernel families need a profiled window in every session "
                                       "(train --profile-steps). Double-click a row for the candidate's profile."));
  draw_verdict_intervals(verdict_chart_, verdict_.report);
  // The trend's metric list follows the phases and collectives these sessions recorded.
  const QString metric = trend_metric_->currentText();
  trend_metric_->clear();
  for (const auto& m : trend_metric_choices(&verdict_.report)) trend_metric_->addItem(QString::fromStdString(m));
  trend_metric_->setCurrentText(metric);
  emit verdictReady();
}

void SessionsPage::clearVerdict(const QString& why) {
  verdict_choices_.clear();
  verdict_groups_->clear();
  verdict_ = VerdictView{};
  for (TextTableModel* m : {verdict_model_, contributors_model_, changes_model_}) m->setTable({});
  verdict_headline_->setText(why);
  verdict_cli_->clear();
  verdict_notes_->setVisible(false);
  contributors_note_->clear();
  draw_verdict_intervals(verdict_chart_, {});
}

void SessionsPage::showContributorMenu(const QPoint& pos) {
  const QModelIndex index = contributors_view_->indexAt(pos);
  if (!index.isValid()) return;
  QMenu menu;
  menu.addAction(tr("Open in the candidate's profile"), this, [this, row = index.row()] { openContributor(row, false); });
  menu.addAction(tr("Open in the baseline's profile"), this, [this, row = index.row()] { openContributor(row, true); });
  menu.exec(contributors_view_->viewport()->mapToGlobal(pos));
}

void SessionsPage::openContributor(int row, bool baseline) {
  const auto& rows = verdict_.report.contributors;
  if (row < 0 || static_cast<std::size_t>(row) >= rows.size() || verdict_.request.candidate.empty()) return;
  const ss::Contributor contributor = rows[static_cast<std::size_t>(row)];
  const SessionRef ref = baseline ? verdict_.request.baseline.front() : verdict_.request.candidate.front();
  connect(
      profile_view_, &ProfileView::profileLoaded, this,
      [this, contributor] {
        const auto data = profile_view_->data();
        if (!data || !data->records) return;
        const ProfileTarget target = profile_target(contributor, *data->records);
        show_pane(profile_view_, target.pane);
        if (!target.note.empty()) emit statusMessage(QString::fromStdString(target.note));
        if (!target.selection.empty()) profile_view_->setSelection(target.selection);
      },
      Qt::SingleShotConnection);
  profile(ref);
}

QWidget* SessionsPage::buildTrendTab() {
  trend_model_ = new TextTableModel(this);
  trend_model_->setToneColumn(6);
  trend_watcher_ = new QFutureWatcher<TrendView>(this);
  connect(trend_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::onTrendReady);
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  layout->addWidget(buildTrendControls());
  trend_cli_ = make_cli_label("trend_cli");
  trend_notes_ = make_wrapping_label("trend_notes");
  trend_notes_->setVisible(false);
  trend_chart_ = new QCustomPlot;
  trend_chart_->setMinimumSize(240, 160);
  add_plot_export_menu(trend_chart_, "trend", [this](const QString& m) { emit statusMessage(m); });
  auto* table = make_verdict_table(trend_model_);
  add_table_export_menu(table, "trend", [this](const QString& m) { emit statusMessage(m); });
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(trend_chart_);
  split->addWidget(table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(trend_cli_);
  layout->addWidget(trend_notes_);
  layout->addWidget(split, 1);
  return tab;
}

QWidget* SessionsPage::buildTrendControls() {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  trend_metric_ = new QComboBox;
  trend_metric_->setEditable(true);  // phase:NAME and comm:OP of any timer or collective
  for (const auto& m : trend_metric_choices(nullptr)) trend_metric_->addItem(QString::fromStdString(m));
  trend_metric_->setToolTip(tr("step_time, throughput, mfu, peak_memory, reserved_memory, loss, phase:NAME, comm:OP"));
  trend_by_ = new QComboBox;
  for (auto g : {ss::TrendGrouping::kTag, ss::TrendGrouping::kVersion, ss::TrendGrouping::kDate, ss::TrendGrouping::kSession})
    trend_by_->addItem(ss::trend_grouping_name(g), static_cast<int>(g));
  trend_tag_ = new QLineEdit;
  trend_tag_->setPlaceholderText(tr("only sessions tagged\u2026"));
  trend_tag_->setClearButtonEnabled(true);
  auto* show = new QPushButton(tr("Show trend"));
  show->setToolTip(tr("The metric per group of the file's sessions, with its 95% interval and the steps (sessions trend)"));
  connect(show, &QPushButton::clicked, this, &SessionsPage::runTrend);
  connect(trend_metric_, &QComboBox::activated, this, &SessionsPage::runTrend);
  connect(trend_by_, &QComboBox::activated, this, &SessionsPage::runTrend);
  connect(trend_tag_, &QLineEdit::editingFinished, this, &SessionsPage::runTrend);
  layout->addWidget(new QLabel(tr("Metric")));
  layout->addWidget(trend_metric_, 2);
  layout->addWidget(new QLabel(tr("by")));
  layout->addWidget(trend_by_);
  layout->addWidget(trend_tag_, 2);
  layout->addWidget(show);
  return row;
}

void SessionsPage::markTrendStale() {
  trend_stale_ = true;
  if (tabs_->tabText(tabs_->currentIndex()) == tr("Trend")) runTrend();
}

QString SessionsPage::trendFile() const {
  if (!comparison_.sessions.empty()) return QString::fromStdString(comparison_.sessions.front().file);
  return files_.value(0);
}

void SessionsPage::showTrend(const QString& metric, ss::TrendGrouping grouping, const QString& tag) {
  trend_metric_->setCurrentText(metric);
  trend_by_->setCurrentIndex(trend_by_->findData(static_cast<int>(grouping)));
  trend_tag_->setText(tag);
  runTrend();
}

void SessionsPage::runTrend() {
  if (trend_watcher_->isRunning()) {
    trend_pending_ = true;
    return;
  }
  TrendRequest request;
  request.file = trendFile().toStdString();
  request.metric = trend_metric_->currentText().trimmed().toStdString();
  request.grouping = static_cast<ss::TrendGrouping>(trend_by_->currentData().toInt());
  request.tag = trend_tag_->text().trimmed().toStdString();
  if (warmup_->value() > 0) request.warmup_steps = warmup_->value();
  trend_stale_ = false;
  trend_cli_->setText(QString::fromStdString(trend_cli_command(request)));
  trend_watcher_->setFuture(QtConcurrent::run([request] { return compute_trend(request); }));
}

void SessionsPage::onTrendReady() {
  trend_ = trend_watcher_->result();
  if (trend_pending_) {
    trend_pending_ = false;
    return runTrend();
  }
  trend_model_->setTable(trend_.groups);
  draw_trend(trend_chart_, trend_);
  QString notes;
  if (!trend_.error.empty()) {
    notes = tr("<b>No trend:</b> %1").arg(QString::fromStdString(trend_.error).toHtmlEscaped());
  } else {
    notes = tr("%1 of %2, %3; a step is a change beyond %4% against the group before (red \u25b2 a regression, "
               "green \u25bc an improvement)")
                .arg(QString::fromStdString(trend_.report.metric), QString::fromStdString(trend_.request.file).toHtmlEscaped(),
                     QString::fromStdString(trend_.report.statistic))
                .arg(100 * trend_.report.threshold, 0, 'f', 1);
    if (!trend_.report.notes.empty()) notes += tr("<br>Notes: %1").arg(joined(trend_.report.notes));
  }
  trend_notes_->setText(notes);
  trend_notes_->setVisible(true);
  emit trendReady();
}

}  // namespace shardscope::gui
