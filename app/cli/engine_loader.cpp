// Finding and loading the engine module (engine_module.hpp); part of the executable only.
#include <dlfcn.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/engine_module.hpp"

namespace shardscope::app {
namespace {

// The folder of the running executable (the module is installed and built beside it).
std::string executable_folder() {
  std::vector<char> path(4096);
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return ".";
  const std::string exe(path.data(), static_cast<std::size_t>(n));
  const auto slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

EngineEntryPoint load_entry_point(const char* command) {
  const std::string module = executable_folder() + "/" + kEngineModuleFile;
  // RTLD_NOW: a missing symbol fails here, with its name, not in the middle of a run.
  void* handle = ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    std::cerr << "shardscope: error: '" << command << "' needs the engine module " << module
              << ", which cannot be loaded (" << (why ? why : "unknown reason")
              << "); rebuild it (cmake --build build --target shardscope) or reinstall ShardScope\n";
    return nullptr;
  }
  auto entry = reinterpret_cast<EngineEntryPoint>(::dlsym(handle, kEngineEntryPoint));
  if (!entry)
    std::cerr << "shardscope: error: " << module << " has no " << kEngineEntryPoint
              << ": it is not this ShardScope's engine module; rebuild it\n";
  return entry;
}

}  // namespace

int run_engine_command(const char* command, const std::vector<std::string>& args) {
  static const EngineEntryPoint entry = load_entry_point(command);
  if (!entry) return kExitFindings;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return entry(command, static_cast<int>(argv.size()), argv.data());
}

}  // namespace shardscope::app
