// `shardscope launch` before any rank starts: DeepSpeed's NODE_SPEC filters and device rules, each
// rank's environment and command, the MASTER_PORT check, and how output lines are split and
// classed. The expected values are DeepSpeed's (runner.py's parse_resource_filter, launch.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "launcher/device_selection.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/local_launcher.hpp"
#include "launcher/port_check.hpp"
#include "launcher/rank_output.hpp"
#include "sessions/run_secret.hpp"
#include "tests/engine/temp_dir.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::launcher {
namespace {

using Kind = LaunchError::Kind;

// The message and kind of the LaunchError `f` throws ("" when it throws none).
template <typename F>
std::pair<std::string, Kind> launch_error(F f) {
  try {
    f();
  } catch (const LaunchError& e) {
    return {e.what(), e.kind()};
  }
  return {"", Kind::kUsage};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<int> select(DeviceSelectionOptions o) { return select_local_devices(o).device_ids; }

DeviceSelectionOptions gpus(int count) {
  DeviceSelectionOptions o;
  o.gpu_count = count;
  return o;
}

TEST(LauncherDevices, BadSpecsNameTheFlagAndTheSyntaxAsLaunchUsageErrors) {
  auto [message, kind] = launch_error([] { select_local_devices([] {
    auto o = gpus(2);
    o.include = "localhost:a";
    return o;
  }()); });
  EXPECT_EQ(kind, Kind::kUsage);
  EXPECT_TRUE(contains(message, "--include localhost:a: 'a' is not a slot (GPU) index")) << message;
}

TEST(LauncherDevices, FiltersAsDeepSpeedDoes) {
  EXPECT_EQ(select(gpus(4)), (std::vector<int>{0, 1, 2, 3}));
  auto o = gpus(4);
  o.num_gpus = 2;
  EXPECT_EQ(select(o), (std::vector<int>{0, 1}));
  o = gpus(4);
  o.include = "localhost:3,1";
  EXPECT_EQ(select(o), (std::vector<int>{1, 3}));
  o.include = "localhost";
  EXPECT_EQ(select(o), (std::vector<int>{0, 1, 2, 3}));
  o = gpus(4);
  o.exclude = "localhost:1";
  EXPECT_EQ(select(o), (std::vector<int>{0, 2, 3}));
  o.exclude = "localhost:0@localhost:3";
  EXPECT_EQ(select(o), (std::vector<int>{1, 2}));
}

TEST(LauncherDevices, ContradictionsAndUnknownSlotsAreUsageErrors) {
  auto o = gpus(2);
  o.include = "localhost:0";
  o.exclude = "localhost:1";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "mutually exclusive"));
  o = gpus(2);
  o.num_gpus = 1;
  o.include = "localhost:0";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "--num_gpus cannot be combined with --include/--exclude"));
  o = gpus(2);
  o.include = "localhost:5";
  auto [message, kind] = launch_error([&] { select(o); });
  EXPECT_EQ(kind, Kind::kUsage);
  EXPECT_TRUE(contains(message, "No slot '5' specified on host 'localhost'")) << message;
  EXPECT_TRUE(contains(message, "2 GPU(s), ids 0-1")) << message;
  o = gpus(2);
  o.exclude = "localhost";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "leaves no GPU to run on"));
  o = gpus(2);
  o.num_gpus = 3;
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "this machine has 2 GPU(s) (ids 0-1); ask for at most 2"));
}

TEST(LauncherDevices, AnotherHostNeedsAHostfile) {
  auto o = gpus(2);
  o.include = "worker-1:0";
  auto [message, kind] = launch_error([&] { select(o); });
  EXPECT_EQ(kind, Kind::kUsage);
  EXPECT_TRUE(contains(message, "host 'worker-1' is not this machine")) << message;
  EXPECT_TRUE(contains(message, "there is no hostfile to find it in")) << message;
  EXPECT_TRUE(contains(message, "--hostfile FILE")) << message;
  o.include = "";
  o.exclude = "worker-1";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "--exclude: host 'worker-1'"));
  o = gpus(2);
  o.include = "gpu-node-7:1";
  o.local_names.push_back("gpu-node-7");  // this machine's own host name is accepted
  EXPECT_EQ(select(o), (std::vector<int>{1}));
}

TEST(LauncherDevices, NoGpuSuggestsCpuRanks) {
  auto [message, kind] = launch_error([] { select(gpus(0)); });
  EXPECT_EQ(kind, Kind::kEnvironment);
  EXPECT_TRUE(contains(message, "no GPU is visible")) << message;
  EXPECT_TRUE(contains(message, "use --num_procs N")) << message;
  auto o = gpus(0);
  o.num_gpus = 2;
  message = launch_error([&] { select(o); }).first;
  EXPECT_TRUE(contains(message, "--num_gpus 2: no GPU is visible")) << message;
  EXPECT_TRUE(contains(message, "use --num_procs 2 to start 2 CPU rank(s)")) << message;
}

TEST(LauncherDevices, CudaVisibleDevicesBecomesTheIncludeListWithoutFilters) {
  auto o = gpus(4);
  o.cuda_visible_devices = "2,3";
  auto selection = select_local_devices(o);
  EXPECT_EQ(selection.device_ids, (std::vector<int>{2, 3}));
  ASSERT_EQ(selection.notes.size(), 1u);
  EXPECT_EQ(selection.notes[0], "Detected CUDA_VISIBLE_DEVICES=2,3: setting --include=localhost:2,3");
  o.num_gpus = 1;  // a filter: DeepSpeed ignores the variable and says so
  selection = select_local_devices(o);
  EXPECT_EQ(selection.device_ids, (std::vector<int>{0}));
  ASSERT_EQ(selection.notes.size(), 1u);
  EXPECT_TRUE(contains(selection.notes[0], "but ignoring it because one or several of --include/--exclude/--num_gpus"));
  o = gpus(4);
  o.cuda_visible_devices = "GPU-8d2c1f3a";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "by UUID"));
  o.cuda_visible_devices = "";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "hides every GPU"));
  o.cuda_visible_devices = "1,7";
  EXPECT_TRUE(contains(launch_error([&] { select(o); }).first, "No slot '7'"));
}

TEST(LauncherDevices, CountsNvidiaSmiGpusButNotMigInstances) {
  const std::string listing =
      "GPU 0: NVIDIA H200 (UUID: GPU-aaaa)\n"
      "  MIG 3g.71gb     Device  0: (UUID: MIG-bbbb)\n"
      "GPU 1: NVIDIA H200 (UUID: GPU-cccc)\n";
  EXPECT_EQ(count_nvidia_smi_gpus(listing), 2);
  EXPECT_EQ(count_nvidia_smi_gpus("No devices were found\n"), 0);
}

TEST(LauncherPlan, ScansTrainArgumentsInBothForms) {
  const auto view = scan_train_args({"--config=ds.json", "--set", "a=1", "--device", "cpu", "--set=b=2", "--steps", "3"});
  EXPECT_EQ(view.config, "ds.json");
  EXPECT_EQ(view.device, "cpu");
  EXPECT_EQ(view.overrides, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_FALSE(view.session);
}

std::string env_of(const RankSpec& spec, const std::string& key) {
  for (const auto& e : spec.command.env)
    if (e.rfind(key + "=", 0) == 0) return e.substr(key.size() + 1);
  return "<unset>";
}

TEST(LauncherPlan, CpuRanksGetTheirEnvironmentAndDeviceCpu) {
  LaunchRequest r;
  r.program = "/bin/true";
  r.program_args = {"train"};
  r.train_args = {"--steps", "3"};
  r.num_procs = 2;
  r.base_env = std::vector<std::string>{"PATH=/usr/bin", "RANK=7", "SHARDSCOPE_COLLECTOR_SECRET=stale"};
  const auto plan = make_launch_plan(r);
  ASSERT_EQ(plan.ranks.size(), 2u);
  EXPECT_TRUE(plan.cpu);
  const int threads = std::max(1, available_cpus() / 2);
  for (int rank = 0; rank < 2; ++rank) {
    const auto& spec = plan.ranks[static_cast<std::size_t>(rank)];
    EXPECT_EQ(spec.device, "cpu");
    EXPECT_EQ(spec.command.argv, (std::vector<std::string>{"/bin/true", "train", "--steps", "3", "--device", "cpu"}));
    EXPECT_EQ(env_of(spec, "RANK"), std::to_string(rank));
    EXPECT_EQ(env_of(spec, "LOCAL_RANK"), std::to_string(rank));
    EXPECT_EQ(env_of(spec, "WORLD_SIZE"), "2");
    EXPECT_EQ(env_of(spec, "LOCAL_SIZE"), "2");
    EXPECT_EQ(env_of(spec, "CROSS_RANK"), "0");
    EXPECT_EQ(env_of(spec, "CROSS_SIZE"), "1");
    EXPECT_EQ(env_of(spec, "MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(env_of(spec, "MASTER_PORT"), "29500");
    EXPECT_EQ(env_of(spec, "OMP_NUM_THREADS"), std::to_string(threads));
    EXPECT_EQ(env_of(spec, "PATH"), "/usr/bin");
    EXPECT_EQ(env_of(spec, "SHARDSCOPE_COLLECTOR_SECRET"), "<unset>");
    EXPECT_EQ(env_of(spec, "CUDA_VISIBLE_DEVICES"), "<unset>");
    EXPECT_EQ(std::count_if(spec.command.env.begin(), spec.command.env.end(),
                            [](const std::string& e) { return e.rfind("RANK=", 0) == 0; }),
              1);
  }
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_TRUE(contains(plan.notes[0], "setting OMP_NUM_THREADS=" + std::to_string(threads))) << plan.notes[0];
}

TEST(LauncherPlan, UserSettingsWin) {
  LaunchRequest r;
  r.program = "/bin/true";
  r.train_args = {"--device=cpu"};
  r.num_procs = 3;
  r.master_port = 29611;
  r.base_env = std::vector<std::string>{"OMP_NUM_THREADS=5"};
  auto plan = make_launch_plan(r);
  EXPECT_EQ(plan.ranks[2].command.argv, (std::vector<std::string>{"/bin/true", "--device=cpu"}));
  EXPECT_EQ(env_of(plan.ranks[2], "OMP_NUM_THREADS"), "5");
  EXPECT_EQ(env_of(plan.ranks[2], "MASTER_PORT"), "29611");
  EXPECT_TRUE(plan.notes.empty());
  attach_session(plan, "127.0.0.1:4567", "secret-abc123");
  EXPECT_EQ(plan.ranks[1].command.argv,
            (std::vector<std::string>{"/bin/true", "--device=cpu", "--collector", "127.0.0.1:4567"}));
  // Each rank gets its own key on descriptor 3, and neither it nor the run's secret is in its environment.
  EXPECT_EQ(env_of(plan.ranks[1], "SHARDSCOPE_COLLECTOR_KEY_FD"), "3");
  EXPECT_EQ(env_of(plan.ranks[1], "SHARDSCOPE_COLLECTOR_SECRET"), "<unset>");
  EXPECT_EQ(plan.ranks[1].command.key_handover, sessions::rank_key("secret-abc123", 1));
  EXPECT_NE(plan.ranks[0].command.key_handover, plan.ranks[1].command.key_handover);
  for (const auto& spec : plan.ranks)
    for (const auto& entry : spec.command.env) {
      EXPECT_EQ(entry.find("secret-abc123"), std::string::npos) << entry;
      EXPECT_EQ(entry.find(spec.command.key_handover), std::string::npos) << entry;
    }
}

TEST(LauncherPlan, GpuRanksSeeTheSelectedDevices) {
  LaunchRequest r;
  r.program = "/bin/true";
  r.include = "localhost:1,3";
  r.gpu_count = 4;
  r.base_env = std::vector<std::string>{};
  const auto plan = make_launch_plan(r);
  ASSERT_EQ(plan.ranks.size(), 2u);
  EXPECT_FALSE(plan.cpu);
  EXPECT_EQ(plan.ranks[1].device, "cuda:3");
  EXPECT_EQ(env_of(plan.ranks[1], "CUDA_VISIBLE_DEVICES"), "1,3");  // as launch.py: cuda:LOCAL_RANK among them
  EXPECT_EQ(env_of(plan.ranks[1], "LOCAL_RANK"), "1");
  EXPECT_EQ(env_of(plan.ranks[1], "OMP_NUM_THREADS"), "<unset>");
  EXPECT_EQ(plan.ranks[1].command.argv, (std::vector<std::string>{"/bin/true"}));
}

TEST(LauncherPlan, RefusesWhatBelongsToTheLauncherAndCpuWithGpuFlags) {
  LaunchRequest r;
  r.program = "/bin/true";
  r.num_procs = 2;
  r.train_args = {"--session", "s.db"};
  EXPECT_TRUE(contains(launch_error([&] { make_launch_plan(r); }).first, "put it before `--`"));
  r.train_args = {"--collector=127.0.0.1:1"};
  EXPECT_TRUE(contains(launch_error([&] { make_launch_plan(r); }).first, "the launcher hosts the collector"));
  r.train_args = {};
  r.num_gpus = 2;
  EXPECT_TRUE(contains(launch_error([&] { make_launch_plan(r); }).first, "--num_procs starts CPU ranks"));
}

TEST(LauncherPort, BusyPortNamesItAndSuggestsMasterPort) {
  test::LoopbackSocket busy(/*listen=*/true);
  const int port = busy.port();
  ASSERT_GT(port, 0);
  EXPECT_FALSE(port_is_free("127.0.0.1", port));
  auto [message, kind] = launch_error([&] { check_master_port_free("127.0.0.1", port); });
  EXPECT_EQ(kind, Kind::kEnvironment);
  EXPECT_TRUE(contains(message, "MASTER_PORT " + std::to_string(port) + " on 127.0.0.1 is already in use")) << message;
  EXPECT_TRUE(contains(message, "EADDRINUSE")) << message;
  EXPECT_TRUE(contains(message, "Pick another port with --master_port, e.g. --master_port ")) << message;
  busy.close();
  EXPECT_TRUE(port_is_free("127.0.0.1", port));
  EXPECT_NO_THROW(check_master_port_free("127.0.0.1", port));
}

TEST(LauncherPort, AddressOfAnotherMachineIsRefused) {
  auto [message, kind] = launch_error([] { port_is_free("192.0.2.1", 29500); });  // TEST-NET-1, never local
  EXPECT_EQ(kind, Kind::kUsage);
  EXPECT_TRUE(contains(message, "--master_addr 192.0.2.1 is not an address of this machine")) << message;
  EXPECT_TRUE(contains(launch_error([] { port_is_free("127.0.0.1", 70000); }).first, "not a TCP port"));
}

TEST(LauncherOutput, SplitsLinesAcrossReadsAndCutsRunawayLines) {
  LineSplitter splitter(8);
  EXPECT_TRUE(splitter.append("ab", 2).empty());
  EXPECT_EQ(splitter.append("c\r\nde\nf", 7), (std::vector<std::string>{"abc", "de"}));
  EXPECT_EQ(splitter.finish(), "f");
  EXPECT_EQ(splitter.finish(), std::nullopt);
  EXPECT_EQ(splitter.append("0123456789", 10), (std::vector<std::string>{"01234567"}));
}

TEST(LauncherOutput, StderrLinesAreWarningsUnlessTheyReadLikeErrors) {
  using sessions::LogLevel;
  EXPECT_EQ(classify_stderr_line("shardscope: error: --steps must be positive"), LogLevel::kError);
  EXPECT_EQ(classify_stderr_line("terminate called after throwing an instance of 'c10::Error'"), LogLevel::kError);
  EXPECT_EQ(classify_stderr_line("RuntimeError: Connection reset by peer"), LogLevel::kError);
  EXPECT_EQ(classify_stderr_line("ds.json:3:5: warning: gradient_clipping has no effect"), LogLevel::kWarning);
  EXPECT_EQ(classify_stderr_line("  Warning: error feedback is off"), LogLevel::kWarning);
  EXPECT_EQ(classify_stderr_line("[#####.....] 5/10 loss 2.3"), LogLevel::kWarning);
}

TEST(LauncherConfig, ResolvesForTheSessionAndRefusesErrorsBeforeStarting) {
  test::TempDir dir;
  std::ofstream(dir.file("good.json")) << R"({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW"}})";
  TrainArgsView train;
  train.config = dir.file("good.json");
  train.overrides = {"gradient_accumulation_steps=2"};
  const std::string json = resolve_launch_config(train, 2);
  EXPECT_TRUE(contains(json, "\"train_batch_size\":16")) << json;  // 4 * 2 * world 2
  std::ofstream(dir.file("bad.json")) << R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
      "gradient_accumulation_steps": 4})";
  train.config = dir.file("bad.json");
  train.overrides.clear();
  auto [message, kind] = launch_error([&] { resolve_launch_config(train, 2); });
  EXPECT_EQ(kind, Kind::kConfig);
  EXPECT_TRUE(contains(message, "30 != 4 * 4 * 2")) << message;
  EXPECT_TRUE(contains(message, "no rank was started")) << message;
  train.config = dir.file("missing.json");
  EXPECT_EQ(launch_error([&] { resolve_launch_config(train, 1); }).second, Kind::kUsage);
  LaunchRequest r;
  EXPECT_EQ(launch_session_name(r, train), "missing");
  train.name = "from-train";
  EXPECT_EQ(launch_session_name(r, train), "from-train");
  r.name = "mine";
  EXPECT_EQ(launch_session_name(r, train), "mine");
}

}  // namespace
}  // namespace shardscope::launcher
