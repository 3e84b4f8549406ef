// The commands that do not train start without LibTorch (docs/reliability.md, "Start-up"): the
// `shardscope` executable links only the LibTorch-free libraries and loads the engine module
// (shardscope-engine.so) just for what ranks run (train, allreduce); the launcher and its node agent
// start ranks without it; ckpt reads checkpoints with the LibTorch-free checkpoints library.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

extern char** environ;

namespace shardscope::testing {
namespace {

// The dynamic loader's own account of the libraries it opened (glibc's LD_DEBUG=libs, on stderr).
std::string libraries_loaded_by(const std::vector<std::string>& args) {
  return run_cli(args, {"LD_DEBUG=libs"}).err;
}

bool mentions_libtorch(const std::string& loader_log) { return loader_log.find("libtorch") != std::string::npos; }

std::string template_path() { return std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates/zero3.json"; }

TEST(StartupCli, CommandsThatDoNotTrainLoadNoLibTorch) {
  const std::vector<std::vector<std::string>> commands = {
      {"--help"},
      {"validate", template_path()},
      {"estimate", "--params", "7e9", "--gpus-per-node", "8", "--gpu", "H100-80GB"},
      {"sessions", "list", "--db", "/nonexistent.db"},
      {"sessions", "import", "--help"},
      {"watch", "--help"},
      {"report", "--json"},
      {"ckpt", "info", std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/checkpoints/data/deepspeed/stage2"},
      {"bench", "io", "--help"},
      {"tune", "--help"},  // trials are child launches: the tuner itself never loads the engine
      {"launch", "--help"},
      {"node"},  // a node agent that hears no job (stdin at its end) checks the module is there and exits
      {"train", "--help-me"},  // an unknown flag of an engine command is reported by the module
  };
  for (std::size_t i = 0; i + 1 < commands.size(); ++i)
    EXPECT_FALSE(mentions_libtorch(libraries_loaded_by(commands[i]))) << commands[i][0] << " loaded LibTorch";
  // The check can see LibTorch: the engine module's commands do load it.
  EXPECT_TRUE(mentions_libtorch(libraries_loaded_by(commands.back())));
}

// Runs `argv` (no shell), stdout to /dev/null and stderr to `err_path`; the exit code, and the
// child's resource usage in `usage`.
int run_program(const std::vector<std::string>& args, const std::string& err_path, rusage& usage) {
  std::vector<std::string> storage = args;
  const auto argv = null_terminated(storage);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  ::wait4(pid, &status, 0, &usage);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(StartupCli, ValidatingATemplateTakesUnder50Milliseconds) {
  // User plus system CPU seconds, the best of 5 (the machine is shared, so not wall time). The
  // version is given: without it validate reads the installed DeepSpeed's version, which where
  // python3 is a shim (pyenv) means starting Python, ~0.1 s of its own that is not ShardScope's.
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    rusage usage{};
    ASSERT_EQ(run_program({SHARDSCOPE_CLI_PATH, "validate", "--deepspeed-version", "0.19.7", template_path()},
                          "/dev/null", usage),
              0);
    best = std::min(best, static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                              (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6);
  }
  EXPECT_LT(best, 0.050) << "CPU seconds of `shardscope validate` (loading LibTorch alone takes ~0.5 s)";
}

TEST(StartupCli, AMissingEngineModuleIsNamedWithTheRemedy) {
  test::TempDir dir;
  const std::string copy = dir.file("shardscope");  // the executable alone, without its module
  std::filesystem::copy_file(SHARDSCOPE_CLI_PATH, copy);
  rusage usage{};
  EXPECT_EQ(run_program({copy, "train", "--help"}, dir.file("err"), usage), 1);
  std::ifstream in(dir.file("err"));
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("'train' needs the engine module " + dir.file("shardscope-engine.so")), std::string::npos) << err;
  EXPECT_NE(err.find("rebuild it (cmake --build build --target shardscope)"), std::string::npos) << err;
  EXPECT_EQ(run_program({copy, "validate", template_path()}, dir.file("err"), usage), 0)
      << "the executable's own commands need no module";
  // A node agent on a host without the module says so in one line, before any job arrives.
  EXPECT_EQ(run_program({copy, "node"}, dir.file("err"), usage), 1);
  std::ifstream node_err(dir.file("err"));
  const std::string node_text((std::istreambuf_iterator<char>(node_err)), std::istreambuf_iterator<char>());
  EXPECT_NE(node_text.find("'node' needs the engine module"), std::string::npos) << node_text;
}

TEST(StartupCli, AMissingOrWrongLibTorchIsNamedWithTheSettingAndTheFix) {
  test::TempDir dir;
  // A folder without libtorch.so, then one whose torch/version.py is another torch.
  std::filesystem::create_directories(dir.file("torch/lib"));
  const std::vector<std::string> setting = {"SHARDSCOPE_LIBTORCH_DIR=" + dir.file("torch/lib")};
  ProcessResult r = run_cli({"train", "--help"}, setting);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'train' needs LibTorch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("there is no " + dir.file("torch/lib/libtorch.so") + " (from $SHARDSCOPE_LIBTORCH_DIR)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pip install torch=="), std::string::npos) << r.err;
  std::ofstream(dir.file("torch/lib/libtorch.so")) << "not a library";
  std::ofstream(dir.file("torch/version.py")) << "__version__ = '2.10.0+cpu'\n";
  r = run_cli({"train", "--help"}, setting);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir.file("torch/lib") + " is torch 2.10.0+cpu (from $SHARDSCOPE_LIBTORCH_DIR)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(run_cli({"estimate", "--params", "1e9"}, setting).exit_code, 0)
      << "the commands that do not train need no LibTorch";
}

TEST(StartupCli, VersionAsJsonNamesTheBuildAndWhereLibTorchIs) {
  const ProcessResult r = run_cli({"--version", "--json"}, {"SHARDSCOPE_LIBTORCH_DIR=/nonexistent/torch/lib"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"shardscope_version\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"git_hash\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"libtorch_dir\":\"/nonexistent/torch/lib\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"libtorch_found\":false"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace shardscope::testing
