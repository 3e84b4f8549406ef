#include "app/gui/main_window.hpp"

#include <QApplication>
#include <QCloseEvent>
#include <QScreen>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QHBoxLayout>
#include <QStackedWidget>
#include <QStatusBar>

#include "app/gui/config_editor/config_editor_page.hpp"
#include "app/gui/environment/environment_page.hpp"
#include "app/gui/common/code_editor.hpp"
#include "app/gui/estimator/estimator_page.hpp"
#include "app/gui/common/file_kinds.hpp"
#include "app/gui/sessions/import_dialog.hpp"
#include "app/gui/common/keyboard_shortcuts.hpp"
#include "app/gui/launch/launch_page.hpp"
#include "app/gui/sessions/sessions_page.hpp"
#include "app/gui/tune/tune_page.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ShardScope"));
  page_list_ = new QListWidget(this);
  pages_ = new QStackedWidget(this);
  // The page list has a fixed width (its longest title), the page takes the rest.
  auto* central = new QWidget(this);
  auto* row = new QHBoxLayout(central);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(4);
  row->addWidget(page_list_);
  row->addWidget(pages_, 1);
  setCentralWidget(central);
  connect(page_list_, &QListWidget::currentRowChanged, pages_, &QStackedWidget::setCurrentIndex);

  environment_page_ = new EnvironmentPage(this);
  addPage(environment_page_, tr("Environment"),
          tr("Versions, GPUs, kernels and environment checks (shardscope report)"));
  connect(environment_page_, &EnvironmentPage::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  estimator_page_ = new EstimatorPage(this);
  addPage(estimator_page_, tr("Estimator"),
          tr("Memory per GPU and per node for each ZeRO stage and offload choice (shardscope estimate)"));
  connect(estimator_page_, &EstimatorPage::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  config_editor_page_ = new ConfigEditorPage(this);
  addPage(config_editor_page_, tr("Config Editor"),
          tr("Edit and validate a DeepSpeed config with a form and live diagnostics (shardscope validate)"));
  connect(config_editor_page_, &ConfigEditorPage::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  launch_page_ = new LaunchPage(this);
  addPage(launch_page_, tr("Launch & Watch"),
          tr("Run the engine on this machine and watch curves and logs live (shardscope launch)"));
  launch_page_->setEditorDocument([this] { return config_editor_page_->editor()->toPlainText(); },
                                  [this] { return config_editor_page_->filePath(); });
  connect(launch_page_, &LaunchPage::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  sessions_page_ = new SessionsPage(this);
  addPage(sessions_page_, tr("Sessions & Compare"),
          tr("Open session files, compare 2 to 8 runs, see a profiled window (shardscope sessions)"));
  connect(sessions_page_, &SessionsPage::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  connect(sessions_page_, &SessionsPage::importRequested, this, &MainWindow::showImportDialog);

  connect(launch_page_, &LaunchPage::openSession, this, [this](const QString& file, const QString& uid) {
    sessions_page_->revealSession(file, uid);
    showPage(tr("Sessions & Compare"));
  });
  addTunePage();

  // The page list is exactly as wide as its longest title: never cut ("Environme"), never wider.
  page_list_->setFixedWidth(page_list_->sizeHintForColumn(0) + 2 * page_list_->frameWidth() + 12);
  createMenus();
  restoreWindowState();
  page_list_->setCurrentRow(0);
  statusBar()->showMessage(tr("Ready"));
  environment_page_->refresh();
}

void MainWindow::addPage(QWidget* page, const QString& title, const QString& tooltip) {
  pages_->addWidget(page);
  auto* item = new QListWidgetItem(title, page_list_);
  item->setToolTip(tooltip);
  // Ctrl+1, Ctrl+2, ... switch pages, as in most tabbed desktop tools.
  const int index = page_list_->count() - 1;
  auto* action = new QAction(title, this);
  action->setShortcuts(shortcut_keys(tr("Page %1").arg(index + 1)));
  connect(action, &QAction::triggered, this, [this, index] { page_list_->setCurrentRow(index); });
  addAction(action);
}

// The Tune page comes last, so the other pages keep their Ctrl+N keys.
void MainWindow::addTunePage() {
  tune_page_ = new TunePage(this);
  addPage(tune_page_, tr("Tune"),
          tr("Search stage, micro-batch, offload and buckets for the fastest config that fits (shardscope tune)"));
  connect(tune_page_, &TunePage::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(tune_page_, &TunePage::openConfig, this, [this](const QString& path) {
    if (config_editor_page_->maybeSave() && config_editor_page_->openFile(path)) showPage(tr("Config Editor"));
  });
  connect(tune_page_, &TunePage::compareTrials, this, [this](const std::vector<SessionRef>& refs) {
    const QString file = QString::fromStdString(refs.front().file);
    if (!sessions_page_->files().contains(file)) sessions_page_->openFiles({file});
    sessions_page_->compare(refs);
    showPage(tr("Sessions & Compare"));
  });
}

bool MainWindow::showPage(const QString& title) {
  for (int i = 0; i < page_list_->count(); ++i)
    if (page_list_->item(i)->text() == title) {
      page_list_->setCurrentRow(i);
      return true;
    }
  return false;
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addActions(config_editor_page_->fileActions());
  file->addSeparator();
  QAction* import = file->addAction(tr("&Import DeepSpeed run\u2026"), this, &MainWindow::showImportDialog);
  import->setToolTip(tr("A DeepSpeed run's csv_monitor/TensorBoard folder, logs, config and traces as a session "
                        "(shardscope sessions import)"));
  import->setShortcuts(shortcut_keys(tr("Import DeepSpeed run")));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcuts(shortcut_keys(tr("Quit")));  // Ctrl+Q: QKeySequence::Quit is empty in some key schemes
  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* refresh = view->addAction(tr("&Refresh environment report"), environment_page_,
                                     &EnvironmentPage::refresh);
  refresh->setShortcuts(shortcut_keys(tr("Refresh environment report")));  // F5 (GNOME's Refresh adds Ctrl+R: Start)
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard shortcuts"), this, [this] { showShortcuts(); });
  help->addAction(tr("&About ShardScope"), this, [this] {
    const auto& b = sessions::build_info();
    QMessageBox::about(this, tr("About ShardScope"),
                       tr("<b>ShardScope %1</b> (git %2)<br>Profiler and tuning workbench for sharded "
                          "(ZeRO) training.<br>Qt %3")
                           .arg(QString::fromStdString(b.version), QString::fromStdString(b.git_hash),
                                qVersion()));
  });
}

// Room for the window manager's title bar and borders, which the client size does not include.
constexpr int kFrameAllowance = 48;

QSize MainWindow::defaultSize() {
  const QScreen* screen = QGuiApplication::primaryScreen();
  const QSize available = screen ? screen->availableGeometry().size() : QSize(1200, 800);
  return QSize(1200, 800).boundedTo(available - QSize(kFrameAllowance / 3, kFrameAllowance));
}

void MainWindow::restoreWindowState() {
  QSettings settings;
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) resize(defaultSize());
  restoreState(settings.value("window/state").toByteArray());
  fitToScreen();
}

void MainWindow::fitToScreen() {
  // A geometry saved on a larger screen (or, before, one a long banner had widened) must not
  // come back larger than this screen.
  const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
  if (!screen) return;
  const QSize room = screen->availableGeometry().size() - QSize(kFrameAllowance / 3, kFrameAllowance);
  if (width() > room.width() || height() > room.height()) resize(size().boundedTo(room));
}

QStringList MainWindow::openPaths(const QStringList& paths) {
  QStringList errors, sessions;
  for (const QString& path : paths) {
    QString error;
    switch (classify_file(path, &error)) {
      case FileKind::kSessionStore: sessions << path; break;
      case FileKind::kDeepSpeedConfig:
        if (config_editor_page_->maybeSave() && config_editor_page_->openFile(path)) showPage(tr("Config Editor"));
        break;
      case FileKind::kHfConfig:
      case FileKind::kSafetensors:
        if (estimator_page_->loadFile(path)) showPage(tr("Estimator"));
        break;
      case FileKind::kUnknown: errors << error; break;
    }
  }
  if (!sessions.isEmpty()) {
    sessions_page_->openFiles(sessions);
    showPage(tr("Sessions & Compare"));
  }
  if (!errors.isEmpty()) statusBar()->showMessage(errors.join("; "), 15000);
  return errors;
}

QDialog* MainWindow::showShortcuts() {
  QDialog* dialog = make_shortcuts_dialog(this);
  dialog->show();
  return dialog;
}

ImportDialog* MainWindow::showImportDialog() {
  if (!import_dialog_) {
    import_dialog_ = new ImportDialog(this);
    connect(import_dialog_, &ImportDialog::imported, this, [this](const QString& file, const QString& uid) {
      sessions_page_->revealSession(file, uid);  // reloads the list and selects the new session
      showPage(tr("Sessions & Compare"));
      statusBar()->showMessage(tr("Imported session %1 into %2").arg(uid, file), 8000);
    });
  }
  // The session file the Sessions page has open, unless one was chosen here already.
  if (import_dialog_->sessionFile().isEmpty()) import_dialog_->setSessionFile(sessions_page_->files().value(0));
  import_dialog_->show();
  import_dialog_->raise();
  import_dialog_->activateWindow();
  return import_dialog_;
}

bool MainWindow::confirmStopRun() {
  if (!launch_page_->isRunning()) return true;
  showPage(tr("Launch & Watch"));
  const auto answer = QMessageBox::question(
      this, tr("A run is going"),
      tr("%1\n\nClosing ShardScope stops it: every rank gets SIGTERM (the session records it as interrupted). "
         "Stop the run and quit?")
          .arg(launch_page_->runDescription()),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  return answer == QMessageBox::Yes;
}

bool MainWindow::confirmStopTune() {
  if (!tune_page_->isRunning()) return true;
  showPage(tr("Tune"));
  const auto answer = QMessageBox::question(
      this, tr("The tuner is running"),
      tr("%1\n\nClosing ShardScope stops it: the running trial and its ranks get SIGTERM (Resume runs that trial "
         "again). Stop the tuner and quit?")
          .arg(tune_page_->runDescription()),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  return answer == QMessageBox::Yes;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Unsaved config changes are never dropped silently, and a running job is never ended unasked.
  if (!config_editor_page_->maybeSave() || !confirmStopRun() || !confirmStopTune()) {
    event->ignore();
    return;
  }
  environment_page_->stop();  // a report still loading is ended before the page goes away
  launch_page_->shutdown();   // a running launch is stopped (SIGTERM, then kill): nothing is left behind
  tune_page_->shutdown();     // so is a running tuner, its trial and the trial's ranks
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  event->accept();
}

}  // namespace shardscope::gui
