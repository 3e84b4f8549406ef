#include "app/gui/cli_locator.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace shardscope::gui {

QString shardscope_cli_path() {
  const QString from_env = qEnvironmentVariable("SHARDSCOPE_CLI");
  if (!from_env.isEmpty()) return from_env;
  // The build puts both executables in one folder; an install puts both in bin/.
  const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath("shardscope");
  if (QFileInfo(beside).isExecutable()) return beside;
  const QString on_path = QStandardPaths::findExecutable("shardscope");
  return on_path.isEmpty() ? beside : on_path;
}

}  // namespace shardscope::gui
