#include "app/gui/launch/launch_page.hpp"

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
#include <QTabWidget>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "app/gui/common/cli_locator.hpp"
#include "app/gui/sessions/compare_charts.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/common/rank_heat_map.hpp"
#include "app/gui/launch/launch_runner.hpp"
#include "app/gui/launch/live_plots.hpp"
#include "app/gui/launch/preflight_panel.hpp"
#include "app/gui/launch/rank_console.hpp"
#include "app/gui/launch/session_poller.hpp"
#include "app/gui/common/wheel_guard.hpp"

namespace shardscope::gui {

LaunchPage::LaunchPage(QWidget* parent) : QWidget(parent) {
  runner_ = new LaunchRunner(this);
  poller_ = new SessionPoller(this);
  connect(runner_, &LaunchRunner::lineReceived, this, [this](const ConsoleLine& line) { console_->append(line); });
  connect(runner_, &LaunchRunner::sessionAnnounced, this, [this](const QString& uid) {
    session_uid_ = uid;
    poller_->follow(QString::fromStdString(running_.session_file), uid);
  });
  connect(runner_, &LaunchRunner::finished, this, &LaunchPage::onFinished);
  connect(runner_, &LaunchRunner::rankHostsAnnounced, this, &LaunchPage::onRankHosts);
  connect(poller_, &SessionPoller::updated, this, &LaunchPage::onUpdate);

  auto* splitter = new QSplitter(this);
  auto* scroll = new QScrollArea;
  scroll->setWidget(buildForm());
  scroll_wheel_past_unfocused_fields(scroll->widget());
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

QWidget* LaunchPage::buildButtons() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  start_ = new QPushButton(tr("Start"));
  start_->setShortcut(shortcut_keys(tr("Start")).value(0));
  start_->setToolTip(tr("Start the run (Ctrl+R)"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setToolTip(tr("SIGTERM to the launcher, which stops every rank; killed after a grace period (Ctrl+.)"));
  stop_->setShortcut(shortcut_keys(tr("Stop")).value(0));
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
  cli_twin_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // wraps; never widens the page
  layout->addWidget(cli_twin_);
  return panel;
}

QWidget* LaunchPage::buildWatch() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  banner_ = new QLabel(tr("Choose a config, a model and a session file, then Start."));
  banner_->setWordWrap(true);
  banner_->setTextInteractionFlags(Qt::TextBrowserInteraction);  // the doctor's links
  connect(banner_, &QLabel::linkActivated, this, &LaunchPage::onBannerLink);
  banner_->setFrameShape(QFrame::StyledPanel);
  // A failed launch can bring a 3,000-character line (a missing file's path, a JSON error): the
  // banner wraps it and takes no width of its own, so the window never grows past the screen.
  banner_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_->setMaximumHeight(banner_->fontMetrics().lineSpacing() * 12);
  rank_legend_ = new QLabel;
  rank_legend_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  rank_legend_->setToolTip(tr("The colour of each rank's curve"));
  progress_ = new QProgressBar;
  progress_->setFormat(tr("step %v of %m"));
  eta_ = new QLabel;
  follow_ = new QPushButton(tr("Pause view"));
  follow_->setCheckable(true);
  follow_->setToolTip(tr("Stop following the newest steps, to zoom and pan freely (data keeps arriving)"));
  window_ = new QSpinBox;
  window_->setRange(0, 1000000);
  window_->setValue(300);
  window_->setToolTip(tr("Steps shown while following (0 = all)"));
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
  // The logs, and beside them the hosts' preflight table (it needs the page's width, not the form's).
  auto* tabs = watch_tabs_ = new QTabWidget;
  tabs->addTab(console_, tr("Logs"));
  tabs->addTab(preflight_, tr("Preflight"));
  heat_map_ = new RankHeatMap;
  tabs->addTab(heat_map_, tr("Heat map"));
  connect(tabs, &QTabWidget::currentChanged, this, [this] { refreshHeatMap(0); });
  connect(preflight_, &PreflightPanel::started, tabs, [tabs, this] { tabs->setCurrentWidget(preflight_); });
  connect(this, &LaunchPage::runStarted, tabs, [tabs, this] { tabs->setCurrentWidget(console_); });
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(plots_);
  split->addWidget(tabs);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(banner_);
  layout->addLayout(bar);
  layout->addWidget(rank_legend_);
  layout->addWidget(split, 1);
  return panel;
}

void LaunchPage::setEditorDocument(std::function<QString()> text, std::function<QString()> path) {
  editor_text_ = std::move(text);
  editor_path_ = std::move(path);
  updateCliTwin();
}

void LaunchPage::setUseEditorConfig(bool use) { config_source_->setCurrentIndex(use ? 0 : 1); }

void LaunchPage::showRankLegend(int world_size) {
  // Hosts only for a run across hosts (the runner still holds the last run's until the next starts).
  const auto hosts = running_.hostfile.empty() ? std::map<int, std::string>{} : runner_->facts().rank_hosts;
  plots_->setWorldSize(world_size);
  plots_->setRankName([hosts](int rank) {
    const auto host = hosts.find(rank);
    return QString::fromStdString(rank_label(rank, host == hosts.end() ? std::string() : host->second));
  });
  if (plots_->bandMode()) {  // a legend of 1,024 swatches says nothing
    rank_legend_->setText(tr("%1 ranks: each chart draws the median across ranks (line) and min to max (band); "
                             "hover a chart for the ranks at the ends, and see the Heat map tab for each rank")
                              .arg(world_size));
    return;
  }
  QStringList items;
  for (int r = 0; r < world_size; ++r) {
    const auto host = hosts.find(r);
    const std::string label = rank_label(r, host == hosts.end() ? std::string() : host->second);
    items << QString("<span style='color:%1'>\u25a0</span> %2")
                 .arg(series_color(std::size_t(r)).name(), QString::fromStdString(label).toHtmlEscaped());
  }
  rank_legend_->setText(items.join(" &nbsp; "));
}

// A run across hosts: each host names the ranks it started, so the legend and the log filter say
// host:rank as they arrive.
void LaunchPage::onRankHosts() {
  const auto& hosts = runner_->facts().rank_hosts;
  const int world_size = hosts.empty() ? 0 : hosts.rbegin()->first + 1;
  console_->setRanks(world_size, hosts);
  showRankLegend(world_size);
}

// Read when the tab is shown, then every few seconds while it stays shown: a grid is one pass over
// the session's rows, cheap next to the run but not worth doing twice a second.
void LaunchPage::refreshHeatMap(std::int64_t session_id) {
  constexpr qint64 kEveryMs = 3000;
  if (session_id) heat_map_session_ = session_id;
  if (watch_tabs_->currentWidget() != heat_map_ || heat_map_session_ == 0 || heat_map_->isLoading()) return;
  if (heat_map_clock_.isValid() && heat_map_clock_.elapsed() < kEveryMs && session_id != 0) return;
  heat_map_clock_.start();
  heat_map_->setSession(QString::fromStdString(running_.session_file), heat_map_session_);
}

QString LaunchPage::runDescription() const {
  if (watching_)
    return tr("your command under shardscope watch, step %1, into %2")
        .arg(std::max<std::int64_t>(0, plots_->lastStep()))
        .arg(QString::fromStdString(running_.session_file));
  return tr("%1 %2 rank(s), step %3 of %4, into %5")
      .arg(running_.processes)
      .arg(running_.use_gpus ? tr("GPU") : tr("CPU"))
      .arg(std::max<std::int64_t>(0, plots_->lastStep()))
      .arg(running_.steps)
      .arg(QString::fromStdString(running_.session_file));
}

void LaunchPage::updateCliTwin() {
  if (!cli_twin_) return;
  try {
    cli_twin_->setText(QString::fromStdString(ownCommand() ? watch_command_line(watchSpec())
                                                           : shell_command("shardscope", launch_arguments(spec()))));
  } catch (const std::exception& e) {
    cli_twin_->setText(tr("<i>%1</i>").arg(QString::fromStdString(e.what()).toHtmlEscaped()));
  }
}

}  // namespace shardscope::gui
