#pragma once
// The boundary between the `shardscope` executable and its engine module, shardscope-engine.so:
// the module holds the commands that need LibTorch (train, launch with node and allreduce) and exports one C
// function that runs one of them. The executable finds the module beside itself and loads it
// only for those commands, so every other command starts without LibTorch's 450 MB.
//
// Loading order matters: the torch wheel's libtorch exports broken copies of std::filesystem
// functions; the executable already has libstdc++ loaded when it opens the module, so the real
// ones win symbol lookup (see engine/CMakeLists.txt).

#include <string>
#include <vector>

namespace shardscope::app {

/// The module's file name, looked for in the executable's own folder.
inline constexpr const char* kEngineModuleFile = "shardscope-engine.so";
/// The module's entry point: int (const char* command, int argc, const char* const* argv), where
/// argv holds the command's arguments (after the command name); returns the exit code.
inline constexpr const char* kEngineEntryPoint = "shardscope_engine_run_command";
using EngineEntryPoint = int (*)(const char* command, int argc, const char* const* argv);

/// Loads the module (once) and runs `command` in it; a missing or broken module is an error
/// naming the file and how to get it back (exit 1).
int run_engine_command(const char* command, const std::vector<std::string>& args);

}  // namespace shardscope::app
