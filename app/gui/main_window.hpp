#pragma once
// The workbench window: a page list on the left, the current page on the right, a status bar.
// Pages are added by the issues that build them; only working pages are listed.

#include <QMainWindow>

class QListWidget;
class QStackedWidget;

namespace shardscope::gui {

class ConfigEditorPage;
class EnvironmentPage;
class LaunchPage;
class SessionsPage;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);

  EnvironmentPage* environmentPage() const { return environment_page_; }
  /// Shows the page with this title; false if there is none.
  bool showPage(const QString& title);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void addPage(QWidget* page, const QString& title, const QString& tooltip);
  void createMenus();
  void restoreWindowState();

  QListWidget* page_list_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  EnvironmentPage* environment_page_ = nullptr;
  ConfigEditorPage* config_editor_page_ = nullptr;
  LaunchPage* launch_page_ = nullptr;
  SessionsPage* sessions_page_ = nullptr;
};

}  // namespace shardscope::gui
