#include "app/gui/profile/profile_view.hpp"

#include <cmath>

#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/profile/profile_panes.hpp"
#include "app/gui/profile/profile_timeline.hpp"
#include "app/gui/common/rows_table_model.hpp"
#include "sessions/rank_selection.hpp"

namespace shardscope::gui {
namespace {

SelectionAnalyses analyse(std::shared_ptr<const profiler::ProfileRecords> records, profiler::ProfileSelection selection) {
  SelectionAnalyses out;
  out.selection = selection;
  if (!records) return out;
  const profiler::ProfileRecords kept = profiler::select_records(*records, selection);
  out.analyses = profiler::analyze_records(kept);
  out.collectives = profiler::summarize_collectives(kept.comms);
  return out;
}

/// Whole microseconds from the origin, so the CLI twin's milliseconds (3 decimals) are exact.
std::int64_t snap_to_us(std::int64_t t, std::int64_t origin) {
  return origin + static_cast<std::int64_t>(std::llround(double(t - origin) / 1000.0)) * 1000;
}

QCustomPlot* make_chart() {
  auto* plot = new QCustomPlot;
  plot->setMinimumSize(200, 140);
  return plot;
}

}  // namespace

ProfileView::ProfileView(QWidget* parent) : QWidget(parent) {
  for (RowsTableModel** model : {&kernels_, &collectives_, &overlap_, &phases_, &idle_, &stragglers_})
    *model = new RowsTableModel({}, this);
  watcher_ = new QFutureWatcher<std::shared_ptr<const ProfileData>>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, [this] { show(watcher_->result()); });
  analysis_watcher_ = new QFutureWatcher<SelectionAnalyses>(this);
  connect(analysis_watcher_, &QFutureWatcherBase::finished, this, [this] {
    showAnalyses(analysis_watcher_->result());
    if (reanalyse_) {
      reanalyse_ = false;
      setSelection(selection_);
    }
  });
  header_ = new QLabel(tr("Select one session and choose Profile to see its timeline and analyses."));
  header_->setWordWrap(true);
  header_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  selection_label_ = new QLabel;
  selection_label_->setWordWrap(true);
  selection_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  selection_label_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* clear = new QPushButton(tr("Clear selection"));
  clear->setToolTip(tr("Show the whole session again (Esc)"));
  clear->setShortcut(shortcut_keys(tr("Clear selection")).value(0));
  connect(clear, &QPushButton::clicked, this, [this] { setSelection({}); });
  auto* selection_bar = new QHBoxLayout;
  selection_bar->addWidget(selection_label_, 1);
  selection_bar->addWidget(clear);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(buildTimeline());
  split->addWidget(buildPanes());
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(header_);
  layout->addLayout(selection_bar);
  layout->addWidget(split, 1);
  connectSelection();
}

ProfileView::~ProfileView() {
  watcher_->waitForFinished();
  analysis_watcher_->waitForFinished();
}

QWidget* ProfileView::buildTimeline() {
  auto* tab = new QWidget;
  timeline_ = new ProfileTimeline;
  auto* scroll = new QScrollArea;
  scroll->setWidget(timeline_);
  scroll->setWidgetResizable(true);
  auto* reset = new QPushButton(tr("Profiled window"));
  reset->setToolTip(tr("Zoom to the GPU activity (or the whole run without it); double-click does the same"));
  connect(reset, &QPushButton::clicked, timeline_, &ProfileTimeline::resetZoom);
  auto* png = new QPushButton(tr("Export PNG\u2026"));
  connect(png, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export PNG"), "timeline.png", tr("PNG (*.png)"));
    if (path.isEmpty()) return;
    const bool ok = timeline_->grab().save(path, "PNG");
    emit statusMessage(ok ? tr("Wrote %1").arg(path) : tr("Could not write %1").arg(path));
  });
  auto* legend = new QLabel(tr("<span style='color:#2aa0b4'>\u25a0</span> kernel "
                               "<span style='color:#d62728'>\u25a0</span> NCCL "
                               "<span style='color:#2ca02c'>\u25a0</span> memcpy "
                               "<span style='color:#7f7f7f'>\u25a0</span> memset "
                               "<span style='color:#9a86d2'>\u25a0</span> NVTX "
                               "<span style='color:#dc9a50'>\u25a0</span> timers &nbsp; "
                               "wheel: zoom, drag: pan, Shift+drag: select a range, click: select"));
  legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  // The rank filter shares the legend's row, so the charts below keep their height.
  auto* bar = new QHBoxLayout;
  bar->addWidget(legend, 1);
  bar->addWidget(buildRankFilter());
  bar->addWidget(reset);
  bar->addWidget(png);
  auto* layout = new QVBoxLayout(tab);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(rank_error_);
  layout->addWidget(scroll, 1);
  return tab;
}

QWidget* ProfileView::buildRankFilter() {
  auto* box = new QWidget;
  rank_filter_ = new QLineEdit;
  rank_filter_->setPlaceholderText(tr("all ranks (e.g. 0-7,12 or node3)"));
  rank_filter_->setToolTip(tr("Ranks drawn with their own lanes: ranks, ranges and host names, separated by commas, "
                              "as the Sessions page's heat map takes them. The other profiled ranks are summarized "
                              "in the two lanes on top."));
  rank_filter_->setClearButtonEnabled(true);
  rank_filter_->setMaximumWidth(rank_filter_->fontMetrics().horizontalAdvance("0-7,12,node3,node17") + 40);
  rank_error_ = new QLabel;
  rank_error_->setWordWrap(true);
  rank_error_->setStyleSheet("color: #c0392b");
  rank_error_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  rank_error_->hide();
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(new QLabel(tr("Ranks with lanes")));
  row->addWidget(rank_filter_, 1);
  connect(rank_filter_, &QLineEdit::editingFinished, this, [this] { setRankFilter(rank_filter_->text()); });
  connect(timeline_, &ProfileTimeline::rankPicked, this, [this](int rank) {
    const QString text = rank_filter_->text().trimmed();
    setRankFilter(text.isEmpty() ? QString::number(rank) : text + "," + QString::number(rank));
  });
  return box;
}

bool ProfileView::setRankFilter(const QString& text) {
  rank_filter_->setText(text);
  if (!data_) return false;
  try {
    const std::string filter = text.trimmed().toStdString();
    const auto ranks = sessions::parse_rank_selection(filter, data_->rank_infos);
    timeline_->setShownRanks(filter.empty() || filter == "all" ? std::nullopt : std::optional<std::vector<int>>(ranks));
    rank_error_->hide();
    showHeader();
    return true;
  } catch (const std::exception& e) {
    rank_error_->setText(QString::fromStdString(e.what()));
    rank_error_->show();
    return false;
  }
}

QTableView* ProfileView::addTable(RowsTableModel* model, const QString& export_name) {
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(RowsTableModel::kSortRole);
  auto* view = new QTableView;
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // A templated kernel name is cut in its middle (the tooltip keeps it), so the numbers beside it show.
  view->horizontalHeader()->setMaximumSectionSize(kNameColumnMaxWidth);
  view->setTextElideMode(Qt::ElideMiddle);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  add_table_export_menu(view, export_name, [this](const QString& m) { emit statusMessage(m); });
  return view;
}

QWidget* ProfileView::chartAndTable(QCustomPlot* chart, RowsTableModel* model, const QString& export_name) {
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(chart);
  split->addWidget(addTable(model, export_name));
  split->setStretchFactor(1, 1);
  add_plot_export_menu(chart, export_name, [this](const QString& m) { emit statusMessage(m); });
  return split;
}

QWidget* ProfileView::buildPanes() {
  panes_ = new QTabWidget;
  phase_chart_ = make_chart();
  overlap_chart_ = make_chart();
  panes_->addTab(chartAndTable(phase_chart_, phases_, "phases"), tr("Phases"));
  panes_->addTab(chartAndTable(overlap_chart_, overlap_, "comm_overlap"), tr("Comm overlap"));
  kernels_view_ = addTable(kernels_, "top_kernels");
  kernels_view_->setToolTip(tr("Click a kernel to select it: every pane and the timeline follow"));
  panes_->addTab(kernels_view_, tr("Top kernels"));
  collectives_view_ = addTable(collectives_, "collectives");
  collectives_view_->setToolTip(tr("Click a collective to select it"));
  panes_->addTab(collectives_view_, tr("Collectives"));
  panes_->addTab(addTable(idle_, "gpu_idle"), tr("GPU idle"));
  stragglers_view_ = addTable(stragglers_, "stragglers");
  stragglers_view_->setToolTip(tr("Click a step to select it"));
  panes_->addTab(stragglers_view_, tr("Stragglers"));
  analyses_ = new QPlainTextEdit;
  analyses_->setReadOnly(true);
  analyses_->setLineWrapMode(QPlainTextEdit::NoWrap);
  analyses_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  panes_->addTab(analyses_, tr("As text"));
  return panes_;
}

void ProfileView::connectSelection() {
  connect(timeline_, &ProfileTimeline::rangeSelected, this, [this](std::int64_t a, std::int64_t b) {
    select([&](profiler::ProfileSelection& s) { s.time_range_ns = std::make_pair(a, b); });
  });
  connect(timeline_, &ProfileTimeline::stepSelected, this,
          [this](std::int64_t step) { select([&](profiler::ProfileSelection& s) { s.step = step; }); });
  connect(timeline_, &ProfileTimeline::kernelSelected, this, [this](const QString& name) {
    select([&](profiler::ProfileSelection& s) { s.kernel = name.toStdString(), s.collective.clear(); });
  });
  connect(timeline_, &ProfileTimeline::collectiveSelected, this, [this](const QString& op) {
    select([&](profiler::ProfileSelection& s) { s.collective = op.toStdString(), s.kernel.clear(); });
  });
  // A row of a table selects what it names (the proxy sorts: read through it).
  auto on_row = [this](QTableView* view, int column, auto apply) {
    connect(view, &QTableView::clicked, this, [this, view, column, apply](const QModelIndex& index) {
      const QVariant v = view->model()->index(index.row(), column).data(RowsTableModel::kSortRole);
      select([&](profiler::ProfileSelection& s) { apply(s, v); });
    });
  };
  on_row(kernels_view_, 1, [](profiler::ProfileSelection& s, const QVariant& v) {
    s.kernel = v.toString().toStdString();
    s.collective.clear();
  });
  on_row(collectives_view_, 0, [](profiler::ProfileSelection& s, const QVariant& v) {
    s.collective = v.toString().toStdString();
    s.kernel.clear();
  });
  on_row(stragglers_view_, 0, [](profiler::ProfileSelection& s, const QVariant& v) { s.step = v.toLongLong(); });
}

void ProfileView::select(const std::function<void(profiler::ProfileSelection&)>& change) {
  profiler::ProfileSelection next = selection_;
  change(next);
  setSelection(next);
}

void ProfileView::load(const SessionRef& session) {
  header_->setText(tr("Loading the profile of %1\u2026").arg(QString::fromStdString(session.label)));
  watcher_->setFuture(QtConcurrent::run([session] { return load_profile(session); }));
}

void ProfileView::show(std::shared_ptr<const ProfileData> data) {
  data_ = std::move(data);
  timeline_->setData(data_);
  const auto& shown = timeline_->shownRanks();
  rank_filter_->setText(shown ? QString::fromStdString(sessions::format_rank_selection(*shown)) : QString());
  rank_error_->hide();
  selection_ = {};
  shown_ = {{}, data_->analyses, data_->records ? profiler::summarize_collectives(data_->records->comms)
                                                : std::vector<sessions::CommOpStat>{}};
  showAnalyses(shown_);
  showHeader();
  emit statusMessage(tr("Profile of %1 loaded").arg(QString::fromStdString(data_->session.label)));
  emit profileLoaded();
}

void ProfileView::setSelection(const profiler::ProfileSelection& selection) {
  selection_ = selection;
  if (!data_ || !data_->records) return;
  if (selection_.time_range_ns) {
    auto& [a, b] = *selection_.time_range_ns;
    a = snap_to_us(a, data_->origin_ns);
    b = std::max(a + 1000, snap_to_us(b, data_->origin_ns));
  }
  timeline_->setSelection(selection_);
  showHeader();
  if (analysis_watcher_->isRunning()) {
    reanalyse_ = true;
    return;
  }
  analysis_watcher_->setFuture(QtConcurrent::run(analyse, data_->records, selection_));
}

void ProfileView::showAnalyses(const SelectionAnalyses& shown) {
  shown_ = shown;
  const auto& a = shown.analyses;
  auto fill = [](RowsTableModel* model, TableRows t) { model->setTable(std::move(t.headers), std::move(t.rows)); };
  fill(phases_, phase_rows(a.phases));
  fill(overlap_, overlap_rows(a.comm_overlap));
  fill(kernels_, kernel_rows(a.top_kernels));
  fill(collectives_, collective_rows(shown.collectives));
  fill(idle_, idle_rows(a.gpu_idle));
  fill(stragglers_, straggler_rows(a.stragglers));
  draw_phase_chart(phase_chart_, a.phases);
  draw_overlap_chart(overlap_chart_, a.comm_overlap);
  analyses_->setPlainText(data_ && !data_->error.empty() ? QString::fromStdString(data_->error)
                                                          : QString::fromStdString(profiler::format_profile_analyses(a)));
  emit selectionAnalysed();
}

void ProfileView::showHeader() {
  if (!data_) return;
  if (!data_->error.empty()) {
    header_->setText(tr("<b>Cannot read the profile:</b> %1").arg(QString::fromStdString(data_->error).toHtmlEscaped()));
    selection_label_->clear();
    return;
  }
  header_->setText(tr("<b>%1</b>: %2 records on %3 timeline rows over %4%5")
                       .arg(QString::fromStdString(data_->session.label).toHtmlEscaped())
                       .arg(data_->items)
                       .arg(data_->rows.size())
                       .arg(QString::fromStdString(format_duration_ns(double(data_->end_ns - data_->start_ns))))
                       .arg(data_->analyses.has_profiled_window ? QString()
                                                                : tr(" (no GPU activity: steps and timers only)")));
  if (const int others = static_cast<int>(timeline_->summaryRanks().size()))
    header_->setText(header_->text() + tr("; lanes for ranks %1, the other %2 profiled ranks summarized on top")
                                           .arg(rank_filter_->text().toHtmlEscaped()).arg(others));
  selection_label_->setText(tr("Selection: <b>%1</b> &nbsp; <code>%2</code>")
                                .arg(QString::fromStdString(profiler::describe_selection(selection_, data_->origin_ns)).toHtmlEscaped(),
                                     cliCommand().toHtmlEscaped()));
}

QString ProfileView::cliCommand() const {
  if (!data_ || !data_->records) return {};
  std::vector<std::string> args = {"sessions", "show", data_->records->session_uid, "--db", data_->session.file, "--profile"};
  for (auto& a : profiler::selection_arguments(selection_, data_->origin_ns)) args.push_back(std::move(a));
  return QString::fromStdString(shell_command("shardscope", args));
}

QString ProfileView::analysesText() const { return analyses_->toPlainText(); }

}  // namespace shardscope::gui
