// shardscope-gui [FILE...]: the desktop workbench. Files given on the command line open on the page
// that reads them (a session store, a DeepSpeed config, a config.json or safetensors checkpoint).
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>

#include "app/gui/main_window.hpp"
#include "sessions/build_info.hpp"

int main(int argc, char** argv) {
  QApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("ShardScope");
  QApplication::setApplicationName("ShardScope");
  QApplication::setApplicationVersion(QString::fromStdString(shardscope::sessions::build_info().version));
  QCommandLineParser parser;
  parser.setApplicationDescription("ShardScope: profiler and tuning workbench for sharded (ZeRO) training");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("files", "session files (.db), DeepSpeed configs, config.json or safetensors to open",
                               "[FILE...]");
  parser.process(app);
  shardscope::gui::MainWindow window;
  window.show();
  for (const QString& error : window.openPaths(parser.positionalArguments()))
    std::fprintf(stderr, "shardscope-gui: %s\n", qPrintable(error));
  return app.exec();
}
