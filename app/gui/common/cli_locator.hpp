#pragma once
// The `shardscope` CLI from the GUI's side: where to find the binary it runs for engine work (it
// never links LibTorch), what to say when it is not there, and how a command line is shown as a
// page's CLI twin.

#include <string>
#include <vector>

#include <QString>
#include <QStringList>

namespace shardscope::gui {

struct CliLocation {
  QString path;            ///< the executable found, or empty
  QStringList looked_at;   ///< every place tried, in order (what an error message names)
};

/// $SHARDSCOPE_CLI if set (taken as is); else `shardscope` beside this executable (an install's
/// bin/); else `../cli/shardscope` (the build tree: build/app/gui/shardscope-gui beside
/// build/app/cli/shardscope); else `shardscope` on PATH. `app_dir` defaults to this executable's folder.
CliLocation locate_shardscope_cli(const QString& app_dir = QString());
/// The CLI to run: the located path, or $SHARDSCOPE_CLI / the first place looked at when none was
/// found (so the process error names a real candidate).
QString shardscope_cli_path();
/// "the shardscope CLI was not found: looked at A, B and on PATH; build it (scripts/build.sh) or set
/// SHARDSCOPE_CLI=/path/to/shardscope" (or, for a $SHARDSCOPE_CLI that cannot run, that it cannot).
QString cli_missing_message(const QString& program, const QString& error,
                            const CliLocation& location = locate_shardscope_cli());

/// The command as a shell line (quoted where needed), for a page's "CLI twin" label.
std::string shell_command(const std::string& program, const std::vector<std::string>& args);

}  // namespace shardscope::gui
