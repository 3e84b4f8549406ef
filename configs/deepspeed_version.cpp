// DeepSpeedVersion: parsing the flag, and reading the installed DeepSpeed's version from its
// package metadata: the dist-info's METADATA, found from the interpreter's layout when it is a venv
// or a real interpreter, else by asking the interpreter (importlib.metadata). Nothing imports
// deepspeed or torch, which would take seconds and can fail on a machine without a GPU.
#include "configs/deepspeed_version.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace shardscope::configs {
namespace {

namespace fs = std::filesystem;

constexpr DeepSpeedVersion kDefaultVersion = DeepSpeedVersion::k0_19_7;
constexpr std::array<DeepSpeedVersion, 2> kSupported = {DeepSpeedVersion::k0_19_7, DeepSpeedVersion::k0_19_8};

// Prints the version and the folder the distribution lives in, or nothing when it is absent.
const char* kProbe =
    "import importlib.metadata as m\n"
    "try:\n"
    "    d = m.distribution('deepspeed')\n"
    "    print(d.version)\n"
    "    print(d.locate_file(''))\n"
    "except m.PackageNotFoundError:\n"
    "    pass\n";

/// Runs `python -c code args...` and returns its stdout, or nullopt when the interpreter cannot be run.
std::optional<std::string> run_probe(const std::string& python, const char* code_text = kProbe,
                                     std::vector<std::string> args = {}) {
  int out[2];
  if (pipe(out) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", 0, 0);
  std::string flag = "-c";
  std::string code = code_text;
  std::string program = python;
  std::vector<char*> argv = {program.data(), flag.data(), code.data()};
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  if (spawned == 0) {
    char buffer[512];
    ssize_t got = 0;
    while ((got = read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(got));
  }
  close(out[0]);
  if (spawned != 0) return std::nullopt;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

/// `name` on $PATH, or empty.
std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

bool is_elf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

/// The folders a Python's `import` searches for packages, worked out from its layout: a venv
/// (pyvenv.cfg beside bin/) or a real interpreter under PREFIX/bin. nullopt for anything else (a
/// pyenv or conda shim script), which only running it can answer.
std::optional<std::vector<fs::path>> site_dirs_of(const std::string& python) {
  std::error_code ec;
  fs::path prefix = fs::path(python).parent_path().parent_path();
  if (!fs::exists(prefix / "pyvenv.cfg", ec)) {
    const fs::path real = fs::canonical(python, ec);
    if (ec || !is_elf(real)) return std::nullopt;
    prefix = real.parent_path().parent_path();
  }
  std::vector<fs::path> dirs;
  for (const char* lib : {"lib", "local/lib"}) {
    if (!fs::is_directory(prefix / lib, ec)) continue;
    for (const auto& entry : fs::directory_iterator(prefix / lib, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* leaf : {"site-packages", "dist-packages"})
        if (fs::is_directory(entry.path() / leaf, ec)) dirs.push_back(entry.path() / leaf);
    }
  }
  return dirs;
}

/// Folders that .pth files in `dir` add to sys.path (the lines that are not imports or comments).
std::vector<fs::path> pth_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".pth") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#' || line.rfind("import", 0) == 0) continue;
      const fs::path added = fs::path(line).is_absolute() ? fs::path(line) : dir / line;
      if (fs::is_directory(added, ec)) out.push_back(added);
    }
  }
  return out;
}

/// "Version: 0.19.8" from a dist-info's METADATA.
std::string metadata_version(const fs::path& dist_info) {
  std::ifstream in(dist_info / "METADATA");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Version: ", 0) == 0) return line.substr(9);
  return "";
}

/// The first <package>-*.dist-info in import order (each folder, then what its .pth files add):
/// its version and folder, or nullopt.
std::optional<std::pair<std::string, std::string>> find_dist_info(const std::string& package,
                                                                  const std::vector<fs::path>& dirs) {
  std::vector<fs::path> order;
  for (const auto& dir : dirs) order.push_back(dir);
  for (const auto& dir : dirs)
    for (const auto& added : pth_dirs(dir)) order.push_back(added);
  std::error_code ec;
  for (const auto& dir : order)
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(package + "-", 0) != 0 || entry.path().extension() != ".dist-info") continue;
      return std::make_pair(metadata_version(entry.path()), dir.string());
    }
  return std::nullopt;
}

std::optional<InstalledDeepSpeed> read_dist_info(const std::string& python, const std::vector<fs::path>& dirs) {
  const auto found = find_dist_info("deepspeed", dirs);
  return found ? InstalledDeepSpeed{python, found->first, found->second} : InstalledDeepSpeed{python, "", ""};
}

// Prints "name version" for each installed distribution named on the command line.
const char* kVersionsProbe =
    "import sys, importlib.metadata as m\n"
    "for n in sys.argv[1:]:\n"
    "    try:\n"
    "        print(n, m.version(n))\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n";

}  // namespace

const char* to_string(DeepSpeedVersion version) {
  return version == DeepSpeedVersion::k0_19_8 ? "0.19.8" : "0.19.7";
}

std::string supported_deepspeed_versions_text() {
  std::string text;
  for (const auto version : kSupported) text += (text.empty() ? "" : ", ") + std::string(to_string(version));
  return text;
}

std::optional<DeepSpeedVersion> parse_deepspeed_version(const std::string& text) {
  for (const auto version : kSupported)
    if (text == to_string(version)) return version;
  return std::nullopt;
}

DeepSpeedVersion deepspeed_version_from_flag(const std::string& text) {
  if (const auto version = parse_deepspeed_version(text)) return *version;
  throw std::invalid_argument("--deepspeed-version " + text + ": ShardScope has the rules of DeepSpeed " +
                              supported_deepspeed_versions_text() + " only; pass one of them (the one "
                              "your run uses: python -c 'import deepspeed; print(deepspeed.__version__)')");
}

std::optional<InstalledDeepSpeed> find_installed_deepspeed() {
  const char* chosen = std::getenv("SHARDSCOPE_PYTHON");
  const char* venv = std::getenv("VIRTUAL_ENV");
  std::string python = chosen && *chosen ? chosen : "python3";
  if (!(chosen && *chosen) && venv && *venv && access((std::string(venv) + "/bin/python3").c_str(), X_OK) == 0)
    python = std::string(venv) + "/bin/python3";
  const std::string found_path = search_path(python);
  if (found_path.empty()) return std::nullopt;
  // Reading the dist-info costs microseconds; starting Python (a shim, say) costs 50-100 ms.
  if (const auto dirs = site_dirs_of(found_path)) return read_dist_info(found_path, *dirs);
  const auto output = run_probe(python);
  if (!output) return std::nullopt;
  InstalledDeepSpeed found;
  found.python = python;
  std::istringstream lines(*output);
  std::getline(lines, found.version);
  std::getline(lines, found.location);
  return found;
}

std::map<std::string, std::string> installed_package_versions(const std::string& python,
                                                              const std::vector<std::string>& packages) {
  std::map<std::string, std::string> out;
  const std::string found_path = search_path(python);
  if (found_path.empty()) return out;
  if (const auto dirs = site_dirs_of(found_path)) {
    for (const auto& package : packages)
      if (const auto found = find_dist_info(package, *dirs); found && !found->first.empty()) out[package] = found->first;
    return out;
  }
  const auto output = run_probe(python, kVersionsProbe, packages);
  std::istringstream lines(output.value_or(""));
  std::string name, version;
  while (lines >> name >> version) out[name] = version;
  return out;
}

std::string python_of_program(const std::string& program) {
  const std::string path = search_path(program);
  if (path.empty()) return "";
  if (is_elf(fs::path(path))) return fs::path(path).filename().string().rfind("python", 0) == 0 ? path : "";
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.rfind("#!", 0) != 0) return "";
  std::istringstream words(line.substr(2));
  std::string interpreter, argument;
  words >> interpreter >> argument;
  if (fs::path(interpreter).filename() == "env") interpreter = search_path(argument);
  return fs::path(interpreter).filename().string().rfind("python", 0) == 0 ? interpreter : "";
}

std::string DeepSpeedRules::describe() const {
  return std::string("DeepSpeed ") + to_string(version) + " rules (" + source + ")";
}

DeepSpeedRules choose_deepspeed_rules(const std::optional<std::string>& flag) {
  if (flag) return {deepspeed_version_from_flag(*flag), "--deepspeed-version"};
  const auto installed = find_installed_deepspeed();
  if (!installed)
    return {kDefaultVersion, std::string("default: no Python to ask for its DeepSpeed; pass --deepspeed-version ") +
                                 supported_deepspeed_versions_text()};
  if (installed->version.empty())
    return {kDefaultVersion, "default: " + installed->python + " has no DeepSpeed installed"};
  if (const auto version = parse_deepspeed_version(installed->version))
    return {*version, "the DeepSpeed " + installed->version + " installed for " + installed->python + " in " +
                          installed->location};
  return {kDefaultVersion, installed->python + " has DeepSpeed " + installed->version +
                               ", which ShardScope has no rules for (it has " + supported_deepspeed_versions_text() +
                               "); pass --deepspeed-version to choose"};
}

}  // namespace shardscope::configs
