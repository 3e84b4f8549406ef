#pragma once
// The boundary between the `shardscope` executable and its engine module, shardscope-engine.so:
// the module holds the commands that need LibTorch (what a rank runs: train and allreduce) and exports one C
// function that runs one of them. The executable finds the module beside itself (the build tree)
// or in <prefix>/lib/shardscope (installed), loads LibTorch from a configured folder first, and
// does both only for those commands, so every other command starts without LibTorch's 450 MB.
//
// Loading order matters: the torch wheel's libtorch exports broken copies of std::filesystem
// functions; the executable already has libstdc++ loaded when it opens the module, so the real
// ones win symbol lookup (see engine/CMakeLists.txt).

#include <string>
#include <vector>

namespace shardscope::app {

/// The module's file name, looked for in the executable's own folder, then in kEngineModuleInstallDir.
inline constexpr const char* kEngineModuleFile = "shardscope-engine.so";
/// Where `cmake --install` puts the module, relative to the prefix (scripts/cmake/ShardScopeInstall.cmake).
inline constexpr const char* kEngineModuleInstallDir = "lib/shardscope";
/// The setting naming the folder that holds libtorch.so (the torch wheel's torch/lib); without it,
/// the folder CMake found at build time (SHARDSCOPE_DEFAULT_LIBTORCH_DIR).
inline constexpr const char* kLibTorchDirVariable = "SHARDSCOPE_LIBTORCH_DIR";
/// The module's entry point: int (const char* command, int argc, const char* const* argv), where
/// argv holds the command's arguments (after the command name); returns the exit code.
inline constexpr const char* kEngineEntryPoint = "shardscope_engine_run_command";
using EngineEntryPoint = int (*)(const char* command, int argc, const char* const* argv);

struct LibTorchDir {
  std::string dir;      ///< the folder that should hold libtorch.so
  std::string setting;  ///< where `dir` came from, as the user can change it
};
/// The folder the engine commands load LibTorch from: $SHARDSCOPE_LIBTORCH_DIR, else the build's.
LibTorchDir libtorch_dir();
/// Whether `where` holds a libtorch.so.
bool libtorch_present(const LibTorchDir& where);

/// Whether the engine module and a LibTorch of this build's version are where `run_engine_command`
/// would load them from, without loading either; when not, says so on stderr as it would. For a
/// command that starts ranks here (`launch`), so a missing LibTorch is one error, not one per rank.
bool engine_available(const char* command);

/// Loads LibTorch and the module (once) and runs `command` in it; a missing or broken module, or a
/// missing LibTorch, is an error naming the file or the setting and how to fix it (exit 1).
int run_engine_command(const char* command, const std::vector<std::string>& args);

}  // namespace shardscope::app
