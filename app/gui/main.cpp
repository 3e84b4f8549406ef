// shardscope-gui: the desktop workbench.
#include <QApplication>

#include "app/gui/main_window.hpp"
#include "sessions/build_info.hpp"

int main(int argc, char** argv) {
  QApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ShardScope");
  QApplication::setApplicationName("ShardScope");
  QApplication::setApplicationVersion(QString::fromStdString(shardscope::sessions::build_info().version));
  shardscope::gui::MainWindow window;
  window.show();
  return app.exec();
}
