#pragma once
// The workbench window: a page list on the left, the current page on the right, a status bar.
// Its size never outgrows the screen: pages keep modest minimum widths, long messages wrap
// instead of widening it, and a saved geometry larger than the screen is fitted to it on restore.

#include <QMainWindow>

class QDialog;
class QListWidget;
class QStackedWidget;

namespace shardscope::gui {

class ConfigEditorPage;
class EnvironmentPage;
class EstimatorPage;
class ImportDialog;
class LaunchPage;
class SessionsPage;
class TunePage;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);

  EnvironmentPage* environmentPage() const { return environment_page_; }
  LaunchPage* launchPage() const { return launch_page_; }
  TunePage* tunePage() const { return tune_page_; }
  SessionsPage* sessionsPage() const { return sessions_page_; }
  QListWidget* pageList() const { return page_list_; }
  /// Shows the page with this title; false if there is none.
  bool showPage(const QString& title);
  /// Opens files as `shardscope-gui FILE...` does: session stores on Sessions & Compare, DeepSpeed
  /// configs in the Config Editor, config.json / safetensors on the Estimator. Returns the errors.
  QStringList openPaths(const QStringList& paths);
  /// File > Import...: the import dialog, its session file the Sessions page's first open file.
  ImportDialog* showImportDialog();
  /// Help > Keyboard shortcuts: every shortcut of the window (keyboard_shortcuts.hpp), in a dialog.
  QDialog* showShortcuts();

  /// The size a new window gets (1200 x 800, less on a smaller screen).
  static QSize defaultSize();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void addPage(QWidget* page, const QString& title, const QString& tooltip);
  void createMenus();
  void restoreWindowState();
  void fitToScreen();
  bool confirmStopRun();
  bool confirmStopTune();
  void addTunePage();

  QListWidget* page_list_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  EnvironmentPage* environment_page_ = nullptr;
  EstimatorPage* estimator_page_ = nullptr;
  ConfigEditorPage* config_editor_page_ = nullptr;
  LaunchPage* launch_page_ = nullptr;
  SessionsPage* sessions_page_ = nullptr;
  TunePage* tune_page_ = nullptr;
  ImportDialog* import_dialog_ = nullptr;
};

}  // namespace shardscope::gui
