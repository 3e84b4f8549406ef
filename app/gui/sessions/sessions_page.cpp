#include "app/gui/sessions/sessions_page.hpp"

#include <set>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <qcustomplot.h>

#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/sessions/compare_table_models.hpp"
#include "app/gui/common/gui_export.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/profile/profile_view.hpp"
#include "app/gui/sessions/session_catalog_model.hpp"

namespace shardscope::gui {
namespace {

constexpr int kMaxRecent = 10;

std::vector<std::string> to_std(const QStringList& list) {
  std::vector<std::string> out;
  for (const auto& s : list) out.push_back(s.toStdString());
  return out;
}

QTableView* make_table(QAbstractItemModel* model) {
  auto* view = new QTableView;
  view->setModel(model);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setWordWrap(false);
  return view;
}

}  // namespace

SessionsPage::SessionsPage(QWidget* parent) : QWidget(parent) {
  setAcceptDrops(true);
  catalog_ = new SessionCatalogModel(this);
  proxy_ = new SessionFilterProxy(this);
  proxy_->setSourceModel(catalog_);
  summary_model_ = new SummaryDeltaModel(this);
  config_model_ = new DiffTableModel(this);
  environment_model_ = new DiffTableModel(this);
  run_model_ = new DiffTableModel(this);
  catalog_watcher_ = new QFutureWatcher<Catalog>(this);
  compare_watcher_ = new QFutureWatcher<Comparison>(this);
  plot_watcher_ = new QFutureWatcher<std::vector<PlotCurve>>(this);
  connect(catalog_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::onCatalogLoaded);
  connect(compare_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::onComparisonReady);
  findings_watcher_ = new QFutureWatcher<Comparison>(this);
  connect(findings_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::onFindingsRead);
  connect(plot_watcher_, &QFutureWatcherBase::finished, this, &SessionsPage::drawCurves);

  auto* right = new QWidget;
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  compare_header_ = new QLabel(tr("Open a session file, select 1 to 8 sessions and choose Compare (Ctrl+Return), "
                                  "or one session and Profile. Right-click a session to rename, tag or delete it."));
  compare_header_->setWordWrap(true);
  compare_header_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // errors wrap
  compare_header_->setTextFormat(Qt::RichText);
  tabs_ = new QTabWidget;
  tabs_->addTab(buildCurvesTab(), tr("Curves"));
  tabs_->addTab(buildSummaryTab(), tr("Summary"));
  tabs_->addTab(buildVerdictTab(), tr("Verdict"));
  tabs_->addTab(buildTrendTab(), tr("Trend"));
  tabs_->addTab(buildFindingsTab(), tr("Findings"));
  tabs_->addTab(buildHeatMapTab(), tr("Heat map"));
  breakdown_chart_ = new QCustomPlot;
  add_plot_export_menu(breakdown_chart_, "step_time_breakdown", [this](const QString& m) { emit statusMessage(m); });
  tabs_->addTab(breakdown_chart_, tr("Breakdown"));
  tabs_->addTab(buildDiffTab(run_model_, "run_diff"), tr("Run"));
  tabs_->addTab(buildDiffTab(config_model_, "config_diff"), tr("Config diff"));
  tabs_->addTab(buildDiffTab(environment_model_, "environment_diff"), tr("Environment"));
  profile_view_ = new ProfileView;
  connect(profile_view_, &ProfileView::statusMessage, this, &SessionsPage::statusMessage);
  tabs_->addTab(profile_view_, tr("Profile"));
  // The trend reads every session of the file: only when its tab is looked at.
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int i) {
    if (tabs_->tabText(i) == tr("Trend") && trend_stale_) runTrend();
    if (tabs_->tabText(i) == tr("Heat map")) showHeatMap();
  });
  right_layout->addWidget(compare_header_);
  right_layout->addWidget(tabs_, 1);

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->setObjectName("sessions_splitter");
  splitter->addWidget(buildList());
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({170, 730});  // a few sessions' rows; the comparison or profile gets the height
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(buildToolbar());
  layout->addWidget(splitter, 1);

  QSettings settings;
  splitter->restoreState(settings.value("sessions/splitter").toByteArray());
  connect(splitter, &QSplitter::splitterMoved, this,
          [splitter] { QSettings().setValue("sessions/splitter", splitter->saveState()); });
  updateRecentMenu();
  const QStringList reopen = settings.value("sessions/openFiles").toStringList();
  if (!reopen.isEmpty()) openFiles(reopen);
}

SessionsPage::~SessionsPage() {
  catalog_watcher_->waitForFinished();
  compare_watcher_->waitForFinished();
  findings_watcher_->waitForFinished();
  plot_watcher_->waitForFinished();
  verdict_watcher_->waitForFinished();
  trend_watcher_->waitForFinished();
}

QWidget* SessionsPage::buildToolbar() {
  auto* bar = new QWidget;
  auto* layout = new QHBoxLayout(bar);
  layout->setContentsMargins(6, 6, 6, 0);
  auto* open = new QPushButton(tr("Open\u2026"));
  open->setToolTip(tr("Open session files (.db); you can also drop them on this page"));
  connect(open, &QPushButton::clicked, this, &SessionsPage::chooseFiles);
  auto* recent = new QToolButton;
  recent->setText(tr("Recent"));
  recent->setPopupMode(QToolButton::InstantPopup);
  recent_menu_ = new QMenu(recent);
  recent->setMenu(recent_menu_);
  auto* import = new QPushButton(tr("Import\u2026"));
  import->setToolTip(tr("Import a DeepSpeed run as a session (File > Import, shardscope sessions import)"));
  connect(import, &QPushButton::clicked, this, &SessionsPage::importRequested);
  auto* reload = new QPushButton(tr("Reload"));
  reload->setToolTip(tr("Re-read the open files (running sessions grow)"));
  connect(reload, &QPushButton::clicked, this, &SessionsPage::refresh);
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("Filter: name, config hash, version, host, tag, file (all words must match)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &SessionFilterProxy::setText);
  status_filter_ = new QComboBox;
  status_filter_->addItem(tr("any status"), QString());
  for (const char* s : {"running", "completed", "failed", "interrupted", "hung"}) status_filter_->addItem(tr(s), QString(s));
  connect(status_filter_, &QComboBox::currentIndexChanged, this,
          [this] { proxy_->setStatus(status_filter_->currentData().toString()); });
  auto* compare = new QPushButton(tr("Compare"));
  compare->setToolTip(tr("Compare the selected sessions, the first being the baseline (Ctrl+Return)"));
  connect(compare, &QPushButton::clicked, this, &SessionsPage::compareSelected);
  auto* profile = new QPushButton(tr("Profile"));
  profile->setToolTip(tr("Show the selected session's profiled window (Ctrl+P)"));
  connect(profile, &QPushButton::clicked, this, &SessionsPage::profileSelected);
  for (auto [name, slot] : {std::pair{tr("Compare"), &SessionsPage::compareSelected},
                            std::pair{tr("Profile"), &SessionsPage::profileSelected}}) {
    auto* action = new QAction(name, this);
    action->setShortcuts(shortcut_keys(name));
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);  // only while this page has focus
    connect(action, &QAction::triggered, this, slot);
    addAction(action);
  }
  for (QWidget* w : std::initializer_list<QWidget*>{open, recent, import, reload}) layout->addWidget(w);
  layout->addWidget(filter_, 1);
  layout->addWidget(status_filter_);
  layout->addWidget(compare);
  layout->addWidget(profile);
  return bar;
}

QWidget* SessionsPage::buildList() {
  list_ = make_table(proxy_);
  list_->setSortingEnabled(true);
  list_->sortByColumn(SessionCatalogModel::kStarted, Qt::DescendingOrder);
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->horizontalHeader()->setStretchLastSection(false);
  list_->setMinimumHeight(120);
  connect(list_, &QTableView::doubleClicked, this, [this] {
    if (selectedRefs().size() == 1) profileSelected();
  });
  list_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(list_, &QWidget::customContextMenuRequested, this, &SessionsPage::showListMenu);
  return list_;
}

QWidget* SessionsPage::buildSummaryTab() {
  auto* view = make_table(summary_model_);
  add_table_export_menu(view, "summary", [this](const QString& m) { emit statusMessage(m); });
  view->setToolTip(tr("Deltas against the baseline (the first session); the best value of each row is bold green"));
  return view;
}

QWidget* SessionsPage::buildDiffTab(DiffTableModel* model, const QString& name) {
  auto* tab = new QWidget;
  auto* layout = new QVBoxLayout(tab);
  auto* only = new QCheckBox(tr("differences only"));
  only->setChecked(true);
  connect(only, &QCheckBox::toggled, model, &DiffTableModel::setDiffOnly);
  auto* view = make_table(model);
  // Every session's column starts on screen: a command line is cut in its middle, not allowed to
  // push the other sessions' columns off to the right (its tooltip shows it whole).
  view->horizontalHeader()->setMaximumSectionSize(kDiffColumnMaxWidth);
  view->setTextElideMode(Qt::ElideMiddle);
  add_table_export_menu(view, name, [this](const QString& m) { emit statusMessage(m); });
  auto* note = new QLabel;
  note->setObjectName(name + "_note");
  note->setWordWrap(true);
  note->setVisible(false);
  connect(model, &QAbstractItemModel::modelReset, note, [model, note] {
    note->setText(model->emptyNote());
    note->setVisible(!note->text().isEmpty());
  });
  layout->addWidget(only);
  layout->addWidget(note);
  layout->addWidget(view, 1);
  return tab;
}

void SessionsPage::chooseFiles() {
  const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open session files"), files_.value(0),
                                                          tr("Session files (*.db *.sqlite *.sessions);;All files (*)"));
  if (!paths.isEmpty()) openFiles(paths);
}

void SessionsPage::openFiles(const QStringList& paths) {
  QSettings settings;
  QStringList recent = settings.value("sessions/recentFiles").toStringList();
  for (const QString& p : paths) {
    const QString path = QFileInfo(p).absoluteFilePath();
    if (!files_.contains(path)) files_ << path;
    recent.removeAll(path);
    recent.prepend(path);
  }
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("sessions/recentFiles", recent);
  settings.setValue("sessions/openFiles", files_);
  updateRecentMenu();
  refresh();
}

void SessionsPage::updateRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("sessions/recentFiles").toStringList();
  for (const QString& path : recent)
    recent_menu_->addAction(path, this, [this, path] { openFiles({path}); });
  if (recent.isEmpty()) recent_menu_->addAction(tr("(no recent files)"))->setEnabled(false);
  recent_menu_->addSeparator();
  recent_menu_->addAction(tr("Close all files"), this, [this] {
    files_.clear();
    QSettings().setValue("sessions/openFiles", files_);
    refresh();
  });
}

void SessionsPage::refresh() {
  const auto files = to_std(files_);
  catalog_watcher_->setFuture(QtConcurrent::run([files] { return load_catalog(files); }));
}

void SessionsPage::onCatalogLoaded() {
  Catalog catalog = catalog_watcher_->result();
  const std::size_t count = catalog.rows.size();
  catalog_->setRows(std::move(catalog.rows));
  for (const auto& error : catalog.errors) emit statusMessage(QString::fromStdString(error));
  // The status bar's message is gone with the next one: a file that could not be read stays
  // named under the table until the next load.
  markTrendStale();
  if (!catalog.errors.empty()) {
    QStringList lines;
    for (const auto& error : catalog.errors) lines << QString::fromStdString(error).toHtmlEscaped();
    compare_header_->setText(tr("<b>Could not read every file:</b> %1").arg(lines.join("<br>")));
  }
  if (catalog.errors.empty())
    emit statusMessage(tr("%1 sessions in %2 files").arg(count).arg(files_.size()));
  if (!reveal_uid_.isEmpty()) {
    filter_->clear();
    status_filter_->setCurrentIndex(0);
    list_->clearSelection();
    for (int r = 0; r < proxy_->rowCount(); ++r) {
      const int source = proxy_->mapToSource(proxy_->index(r, 0)).row();
      if (QString::fromStdString(catalog_->row(source).info.uid).startsWith(reveal_uid_)) {
        list_->selectionModel()->select(proxy_->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
        list_->scrollTo(proxy_->index(r, 0));
      }
    }
    reveal_uid_.clear();
  }
  emit catalogLoaded();
}

std::vector<SessionRef> SessionsPage::selectedRefs() const {
  QModelIndexList rows = list_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  std::vector<SessionRef> refs;
  for (const auto& index : rows) refs.push_back(catalog_->ref(proxy_->mapToSource(index).row()));
  return refs;
}

void SessionsPage::revealSession(const QString& file, const QString& uid) {
  reveal_uid_ = uid;
  if (files_.contains(QFileInfo(file).absoluteFilePath()))
    refresh();
  else
    openFiles({file});
}

void SessionsPage::selectByName(const QStringList& names) {
  list_->clearSelection();
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const int source = proxy_->mapToSource(proxy_->index(r, 0)).row();
    if (names.contains(QString::fromStdString(catalog_->row(source).info.name)))
      list_->selectionModel()->select(proxy_->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
  }
}

void SessionsPage::compareSelected() { compare(selectedRefs()); }

void SessionsPage::compare(const std::vector<SessionRef>& refs) {
  if (refs.empty() || refs.size() > sessions::kMaxCompared) {
    emit statusMessage(tr("Select 1 to 8 sessions to compare (%1 selected)").arg(refs.size()));
    return;
  }
  compare_header_->setText(refs.size() == 1 ? tr("Reading %1\u2026").arg(QString::fromStdString(refs[0].label))
                                            : tr("Comparing %1 sessions\u2026").arg(refs.size()));
  const std::int64_t warmup = warmup_->value();
  compare_watcher_->setFuture(QtConcurrent::run([refs, warmup] { return compare_refs(refs, warmup, false); }));
}

void SessionsPage::onComparisonReady() {
  comparison_ = compare_watcher_->result();
  if (!comparison_.error.empty()) {
    compare_header_->setText(tr("<b>Cannot compare:</b> %1").arg(QString::fromStdString(comparison_.error).toHtmlEscaped()));
    emit statusMessage(QString::fromStdString(comparison_.error));
    clearVerdict(tr("No comparison, no verdict."));
    return;
  }
  QStringList legend;
  for (std::size_t s = 0; s < comparison_.sessions.size(); ++s)
    legend << QString("<span style='color:%1'>\u25a0</span> %2%3")
                  .arg(series_color(s).name(), QString::fromStdString(comparison_.sessions[s].label).toHtmlEscaped(),
                       s == 0 && comparison_.sessions.size() > 1 ? tr(" (baseline)") : QString());
  compare_header_->setText(legend.join(" &nbsp; "));
  summary_model_->setComparison(comparison_.sessions, comparison_.summary);
  config_model_->setRows(comparison_.sessions, comparison_.config_diff);
  environment_model_->setRows(comparison_.sessions, comparison_.environment_diff);
  run_model_->setRows(comparison_.sessions, comparison_.run_diff);
  draw_timer_breakdown(breakdown_chart_, comparison_.summaries, comparison_.sessions);
  readFindings();
  updateVerdictChoices();
  if (comparison_.sessions.size() >= 2) runVerdict();
  else clearVerdict(tr("Compare 2 sessions or more for a verdict: the first is the baseline."));
  markTrendStale();
  heat_map_stale_ = true;
  if (tabs_->tabText(tabs_->currentIndex()) == tr("Heat map")) showHeatMap();
  std::set<std::string> files;
  for (const auto& s : comparison_.sessions) files.insert(s.file);
  emit statusMessage(files.size() > 1 ? tr("Showing %1 sessions from %2 files").arg(comparison_.sessions.size()).arg(files.size())
                    : comparison_.sessions.size() == 1 ? tr("Showing 1 session")
                                                       : tr("Showing %1 sessions").arg(comparison_.sessions.size()));
  emit comparisonReady();
  replot();
}

void SessionsPage::profileSelected() {
  const auto refs = selectedRefs();
  if (refs.size() != 1) {
    emit statusMessage(tr("Select one session to see its profile (%1 selected)").arg(refs.size()));
    return;
  }
  profile(refs.front());
}

void SessionsPage::profile(const SessionRef& session) {
  showTab(tr("Profile"));
  profile_view_->load(session);
}

void SessionsPage::showTab(const QString& title) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (tabs_->tabText(i) == title) tabs_->setCurrentIndex(i);
}

void SessionsPage::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void SessionsPage::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (!paths.isEmpty()) openFiles(paths);
  event->acceptProposedAction();
}

}  // namespace shardscope::gui
