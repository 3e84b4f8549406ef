#include "app/gui/common/cli_locator.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace shardscope::gui {

CliLocation locate_shardscope_cli(const QString& app_dir) {
  CliLocation location;
  const QString from_env = qEnvironmentVariable("SHARDSCOPE_CLI");
  if (!from_env.isEmpty()) {
    location.looked_at << from_env + " ($SHARDSCOPE_CLI)";
    if (QFileInfo(from_env).isExecutable()) location.path = from_env;
    return location;  // an explicit choice is never second-guessed
  }
  const QDir dir(app_dir.isEmpty() ? QCoreApplication::applicationDirPath() : app_dir);
  for (const QString& candidate : {dir.filePath("shardscope"), QDir::cleanPath(dir.filePath("../cli/shardscope"))}) {
    location.looked_at << candidate;
    if (QFileInfo(candidate).isFile() && QFileInfo(candidate).isExecutable()) {
      location.path = candidate;
      return location;
    }
  }
  location.looked_at << "shardscope on PATH";
  location.path = QStandardPaths::findExecutable("shardscope");
  return location;
}

QString shardscope_cli_path() {
  const CliLocation location = locate_shardscope_cli();
  if (!location.path.isEmpty()) return location.path;
  const QString from_env = qEnvironmentVariable("SHARDSCOPE_CLI");
  return from_env.isEmpty() ? location.looked_at.value(0) : from_env;
}

QString cli_missing_message(const QString& program, const QString& error, const CliLocation& location) {
  if (!qEnvironmentVariable("SHARDSCOPE_CLI").isEmpty())
    return QObject::tr("Could not run %1 ($SHARDSCOPE_CLI): %2. Point SHARDSCOPE_CLI at the built "
                       "build/app/cli/shardscope, or unset it to use the one beside shardscope-gui.")
        .arg(program, error);
  if (!location.path.isEmpty())
    return QObject::tr("Could not run %1: %2.").arg(program, error);
  return QObject::tr("The shardscope CLI was not found (looked at %1). Build it with scripts/build.sh, or set "
                     "SHARDSCOPE_CLI=/path/to/shardscope.")
      .arg(location.looked_at.join(", "));
}

std::string shell_command(const std::string& program, const std::vector<std::string>& args) {
  auto quote = [](const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") ==
                          std::string::npos)
      return s;
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  std::string line = quote(program);
  for (const auto& a : args) line += " " + quote(a);
  return line;
}

}  // namespace shardscope::gui
