// Finding and loading the engine module (engine_module.hpp); part of the executable only.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/engine_module.hpp"

#ifndef SHARDSCOPE_DEFAULT_LIBTORCH_DIR
#define SHARDSCOPE_DEFAULT_LIBTORCH_DIR ""
#endif
#ifndef SHARDSCOPE_LIBTORCH_VERSION
#define SHARDSCOPE_LIBTORCH_VERSION ""
#endif

namespace shardscope::app {
namespace {

// The folder of the running executable (the module is built beside it, installed in ../lib/shardscope).
std::string executable_folder() {
  std::vector<char> path(4096);
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return ".";
  const std::string exe(path.data(), static_cast<std::size_t>(n));
  const auto slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Beside the executable in the build tree; <prefix>/lib/shardscope when installed (bin/ has no
// libraries, as Debian wants). The first that exists, or every place looked at for the error.
std::vector<std::string> module_candidates() {
  const std::string bin = executable_folder();
  const auto slash = bin.rfind('/');
  const std::string prefix = slash == std::string::npos || slash == 0 ? std::string() : bin.substr(0, slash);
  return {bin + "/" + kEngineModuleFile, prefix + "/" + kEngineModuleInstallDir + "/" + kEngineModuleFile};
}

}  // namespace

LibTorchDir libtorch_dir() {
  if (const char* env = std::getenv(kLibTorchDirVariable); env && *env)
    return {env, std::string("$") + kLibTorchDirVariable};
  return {SHARDSCOPE_DEFAULT_LIBTORCH_DIR, std::string("the build's default (CMake's SHARDSCOPE_LIBTORCH_DIR; $") +
                                               kLibTorchDirVariable + " overrides it)"};
}

bool libtorch_present(const LibTorchDir& where) { return !where.dir.empty() && file_exists(where.dir + "/libtorch.so"); }

namespace {

// One line (ssh shows a remote agent's last line): what is missing, the setting it came from, the fix.
void print_libtorch_error(const char* command, const std::string& what, const LibTorchDir& where) {
  std::cerr << "shardscope: error: '" << command << "' needs LibTorch " << SHARDSCOPE_LIBTORCH_VERSION << ", and " << what
            << " (from " << where.setting << "); fix: install the torch==" << SHARDSCOPE_LIBTORCH_VERSION
            << " wheel (python3 -m venv ~/torch-venv && ~/torch-venv/bin/pip install torch==" << SHARDSCOPE_LIBTORCH_VERSION
            << ") and point " << kLibTorchDirVariable << " at its lib folder: export " << kLibTorchDirVariable
            << "=$(~/torch-venv/bin/python -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "
               "\"lib\"))') (only train and allreduce, the commands a rank runs, need it)\n";
}

// The wheel's torch/version.py says which torch a lib folder belongs to; "" when it is not a wheel.
std::string wheel_version(const std::string& lib_dir) {
  std::ifstream in(lib_dir + "/../version.py");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("__version__", 0) == 0) {
      const auto open = line.find_first_of("'\"");
      const auto close = line.find_first_of("'\"", open + 1);
      if (open != std::string::npos && close != std::string::npos) return line.substr(open + 1, close - open - 1);
    }
  return "";
}

// Whether the configured folder holds a LibTorch of this build's version; says what is wrong when not.
bool libtorch_found(const char* command) {
  const LibTorchDir where = libtorch_dir();
  if (!libtorch_present(where)) {
    print_libtorch_error(command,
                         where.dir.empty() ? std::string("no folder is set") : "there is no " + where.dir + "/libtorch.so", where);
    return false;
  }
  const std::string version = wheel_version(where.dir);
  const std::string wanted = std::string(SHARDSCOPE_LIBTORCH_VERSION).substr(0, 4);  // "2.11"
  if (!version.empty() && version.rfind(wanted, 0) != 0) {
    print_libtorch_error(command, where.dir + " is torch " + version, where);
    return false;
  }
  return true;
}

// Loads LibTorch from the configured folder before the module, so the module's needed libtorch*.so
// and libc10*.so are these (the dynamic loader matches an already loaded library by its soname)
// rather than whatever a library path would find. libtorch.so brings its siblings through its own
// RPATH ($ORIGIN, the wheel's nvidia/ folders).
bool load_libtorch(const char* command) {
  if (!libtorch_found(command)) return false;
  const LibTorchDir where = libtorch_dir();
  const std::string lib = where.dir + "/libtorch.so";
  if (!::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const char* why = ::dlerror();
    print_libtorch_error(command, lib + " cannot be loaded: " + (why ? why : "unknown reason"), where);
    return false;
  }
  return true;
}

// The engine module's path, or "" after saying where it was looked for.
std::string find_module(const char* command) {
  const std::vector<std::string> candidates = module_candidates();
  for (const auto& candidate : candidates)
    if (file_exists(candidate)) return candidate;
  std::cerr << "shardscope: error: '" << command << "' needs the engine module " << candidates[0] << " (or, installed, "
            << candidates[1] << "), which does not exist; rebuild it (cmake --build build --target shardscope) or "
            << "reinstall ShardScope\n";
  return "";
}

EngineEntryPoint load_entry_point(const char* command) {
  const std::string module = find_module(command);
  if (module.empty() || !load_libtorch(command)) return nullptr;
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

bool engine_available(const char* command) { return !find_module(command).empty() && libtorch_found(command); }

int run_engine_command(const char* command, const std::vector<std::string>& args) {
  static const EngineEntryPoint entry = load_entry_point(command);
  if (!entry) return kExitFindings;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return entry(command, static_cast<int>(argv.size()), argv.data());
}

}  // namespace shardscope::app
