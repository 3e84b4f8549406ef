#include "app/gui/main_window.hpp"

#include <QApplication>
#include <QCloseEvent>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>

#include "app/gui/config_editor_page.hpp"
#include "app/gui/environment_page.hpp"
#include "app/gui/code_editor.hpp"
#include "app/gui/estimator_page.hpp"
#include "app/gui/launch_page.hpp"
#include "app/gui/sessions_page.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ShardScope"));
  page_list_ = new QListWidget(this);
  page_list_->setMaximumWidth(220);
  pages_ = new QStackedWidget(this);
  auto* splitter = new QSplitter(this);
  splitter->addWidget(page_list_);
  splitter->addWidget(pages_);
  splitter->setStretchFactor(1, 1);
  setCentralWidget(splitter);
  connect(page_list_, &QListWidget::currentRowChanged, pages_, &QStackedWidget::setCurrentIndex);

  environment_page_ = new EnvironmentPage(this);
  addPage(environment_page_, tr("Environment"),
          tr("Versions, GPUs, kernels and environment checks (shardscope report)"));
  connect(environment_page_, &EnvironmentPage::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, 8000); });

  auto* estimator_page = new EstimatorPage(this);
  addPage(estimator_page, tr("Estimator"),
          tr("Memory per GPU and per node for each ZeRO stage and offload choice (shardscope estimate)"));
  connect(estimator_page, &EstimatorPage::statusMessage, this,
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

  connect(launch_page_, &LaunchPage::openSession, this, [this](const QString& file, const QString& uid) {
    sessions_page_->revealSession(file, uid);
    showPage(tr("Sessions & Compare"));
  });

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
  action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + index)));
  connect(action, &QAction::triggered, this, [this, index] { page_list_->setCurrentRow(index); });
  addAction(action);
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
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* refresh = view->addAction(tr("&Refresh environment report"), environment_page_,
                                     &EnvironmentPage::refresh);
  refresh->setShortcut(QKeySequence::Refresh);
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About ShardScope"), this, [this] {
    const auto& b = sessions::build_info();
    QMessageBox::about(this, tr("About ShardScope"),
                       tr("<b>ShardScope %1</b> (git %2)<br>Profiler and tuning workbench for sharded "
                          "(ZeRO) training.<br>Qt %3")
                           .arg(QString::fromStdString(b.version), QString::fromStdString(b.git_hash),
                                qVersion()));
  });
}

void MainWindow::restoreWindowState() {
  QSettings settings;
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) resize(1200, 800);
  restoreState(settings.value("window/state").toByteArray());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!config_editor_page_->maybeSave()) {  // unsaved config changes are never dropped silently
    event->ignore();
    return;
  }
  launch_page_->shutdown();  // a running launch is stopped (SIGTERM, then kill): nothing is left behind
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  event->accept();
}

}  // namespace shardscope::gui
