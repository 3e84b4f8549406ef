// Hostfiles and node selection against DeepSpeed itself: tests/configs/data/
// deepspeed_node_selection.json holds what DeepSpeed 0.19.7's runner functions return (or raise)
// for each case (scripts/deepspeed_node_selection_cases.py wrote it); ours must agree, with
// DeepSpeed's message inside ours where it raises.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "configs/hostfile.hpp"
#include "configs/node_selection.hpp"

namespace shardscope::configs {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

nlohmann::json deepspeed_cases() {
  std::ifstream in(std::string(SHARDSCOPE_TEST_DATA_DIR) + "/deepspeed_node_selection.json");
  return nlohmann::json::parse(in);
}

// Our selection of a case, as DeepSpeed's [[host, [slots]], ...], or the error text.
nlohmann::json ours(const nlohmann::json& c, std::string& error) {
  try {
    const Hostfile pool = parse_hostfile(c["hostfile"].get<std::string>(), "hostfile");
    NodeSelectionOptions o;
    const auto& s = c["selection"];
    o.include = s.value("include", "");
    o.exclude = s.value("exclude", "");
    o.num_nodes = s.value("num_nodes", -1);
    o.num_gpus = s.value("num_gpus", -1);
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& n : select_nodes(pool, o)) nodes.push_back({n.host, n.slots});
    return nodes;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return nullptr;
  }
}

TEST(NodeSelection, AgreesWithDeepSpeedsRunnerOnEveryCase) {
  const auto all = deepspeed_cases();
  EXPECT_EQ(all["deepspeed"], "0.19.7");
  ASSERT_GE(all["cases"].size(), 20u);
  for (const auto& c : all["cases"]) {
    std::string error;
    const auto nodes = ours(c, error);
    const std::string label = c["selection"].dump() + " on\n" + c["hostfile"].get<std::string>();
    if (c.contains("nodes")) {
      EXPECT_EQ(nodes, c["nodes"]) << label << "\nour error: " << error;
      continue;
    }
    const std::string expected = c["error"];
    ASSERT_FALSE(error.empty()) << label << " should fail as DeepSpeed's does: " << expected;
    // DeepSpeed's words, except its internal parameter names for two flags the user never typed.
    if (contains(expected, "include_str and exclude_str"))
      EXPECT_TRUE(contains(error, "--include and --exclude are mutually exclusive")) << error;
    else
      EXPECT_TRUE(contains(error, expected)) << "ours: " << error << "\nDeepSpeed: " << expected;
  }
}

TEST(Hostfile, ErrorsNameTheFileLineAndRemedy) {
  try {
    parse_hostfile("worker-0 slots=4\n# ok\nworker-1 slot=4\n", "/etc/hosts.ds");
    FAIL() << "a bad line was accepted";
  } catch (const HostfileError& e) {
    EXPECT_TRUE(contains(e.what(), "/etc/hosts.ds:3: Hostfile contains a bad entry: worker-1 slot=4")) << e.what();
    EXPECT_TRUE(contains(e.what(), "HOST slots=N")) << e.what();
  }
  try {
    parse_hostfile("a slots=1\nb slots=1\na slots=2\n", "hf");
    FAIL() << "a repeated host was accepted";
  } catch (const HostfileError& e) {
    EXPECT_TRUE(contains(e.what(), "hf:3: Hostfile contains multiple entries for a")) << e.what();
    EXPECT_TRUE(contains(e.what(), "line 1 names it already")) << e.what();
  }
  EXPECT_THROW(parse_hostfile("big slots=99999999\n", "hf"), HostfileError);
  const auto hostfile = parse_hostfile("  10.0.0.1 slots=2\n10.0.0.2\tslots=8 max_slots=8\n", "hf");
  ASSERT_EQ(hostfile.hosts.size(), 2u);
  EXPECT_EQ(hostfile.hosts[1].host, "10.0.0.2");
  EXPECT_EQ(hostfile.hosts[1].slot_count, 8);
  EXPECT_EQ(hostfile.hosts[1].line, 2);
  EXPECT_EQ(format_hostfile(hostfile), "10.0.0.1 slots=2\n10.0.0.2 slots=8\n");
  EXPECT_EQ(parse_hostfile(format_hostfile(hostfile), "again").hosts.size(), 2u);
}

TEST(Hostfile, AMissingFileMeansALocalRunAndADirectoryIsRefused) {
  EXPECT_FALSE(read_hostfile("/nonexistent/hostfile").has_value());
  EXPECT_THROW(read_hostfile("/"), HostfileError);
  const std::string path = ::testing::TempDir() + "/hostfile_test_hosts";
  std::ofstream(path) << "node-a slots=2\nnode-b slots=2\n";
  const auto read = read_hostfile(path);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->path, path);
  EXPECT_EQ(read->hosts.size(), 2u);
}

// Issue 31: a symlink loop was "no hostfile" and the launch went on locally.
TEST(Hostfile, ALoopingOrDanglingLinkIsRefusedNotTakenForNoHostfile) {
  const std::string loop = ::testing::TempDir() + "/hostfile_test_loop";
  const std::string dangling = ::testing::TempDir() + "/hostfile_test_dangling";
  ::unlink(loop.c_str());
  ::unlink(dangling.c_str());
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  ASSERT_EQ(::symlink("/nonexistent/hosts", dangling.c_str()), 0);
  for (const auto& path : {loop, dangling}) {
    try {
      read_hostfile(path);
      ADD_FAILURE() << path << " was taken for no hostfile";
    } catch (const HostfileError& e) {
      EXPECT_TRUE(contains(e.what(), path)) << e.what();
      EXPECT_TRUE(contains(e.what(), "symbolic link")) << e.what();
    }
  }
  ::unlink(loop.c_str());
  ::unlink(dangling.c_str());
}

TEST(Hostfile, AHostNameWithAControlCharacterIsRefused) {
  try {
    parse_hostfile("node\x1b]0;owned\x07 slots=1\n", "hf");
    FAIL() << "accepted";
  } catch (const HostfileError& e) {
    EXPECT_TRUE(contains(e.what(), "hf:1: host name")) << e.what();
  }
}

// Where DeepSpeed would accept a selection and fail later, the selection fails now.
TEST(NodeSelection, SaysNowWhatDeepSpeedWouldOnlyHitLater) {
  const auto pool = parse_hostfile("a slots=2\nb slots=1\n", "hf");
  NodeSelectionOptions more_gpus;
  more_gpus.num_gpus = 2;  // DeepSpeed hands host b slots [0, 1] although it has one
  try {
    select_nodes(pool, more_gpus);
    FAIL() << "--num_gpus beyond a host's slots was accepted";
  } catch (const NodeSelectionError& e) {
    EXPECT_TRUE(contains(e.what(), "--num_gpus 2: host 'b' has slots=1 (hf line 2)")) << e.what();
  }
  NodeSelectionOptions everything;
  everything.exclude = "a@b";  // DeepSpeed then fails with an IndexError
  EXPECT_THROW(select_nodes(pool, everything), NodeSelectionError);
  NodeSelectionOptions unknown;
  unknown.include = "c";
  try {
    select_nodes(pool, unknown);
    FAIL();
  } catch (const NodeSelectionError& e) {
    EXPECT_TRUE(contains(e.what(), "--include: Hostname 'c' not found in hostfile hf (it has a, b)")) << e.what();
  }
  EXPECT_EQ(format_slot_ids({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

TEST(NodeSpec, ParsesDeepSpeedSyntaxSortedWithoutDuplicates) {
  const auto specs = parse_node_specs("worker-0@worker-1:2,0,2", "--include");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].host, "worker-0");
  EXPECT_TRUE(specs[0].slots.empty());
  EXPECT_EQ(specs[1].slots, (std::vector<int>{0, 2}));
  const auto merged = parse_node_specs("localhost:3@localhost:1", "--include");
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].slots, (std::vector<int>{1, 3}));
  for (const char* bad : {"localhost:a", ":0", "localhost:", "localhost:-1", "a@@b"})
    EXPECT_THROW(parse_node_specs(bad, "--include"), NodeSelectionError) << bad;
}

}  // namespace
}  // namespace shardscope::configs
