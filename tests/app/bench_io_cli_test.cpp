// `shardscope bench io` and the report's async_io lines as a user meets them: a small sweep on the
// test machine's disk with fio beside every point, the table, the JSON document and the session;
// the errors of bad flags; one async_io line per backend in `shardscope report`.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::testing {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BenchIoCli, SweepsBesideFioPrintsTheAioBlockAndStoresASession) {
  test::TempDir dir;
  const std::vector<std::string> base{"bench", "io", "--path", dir.file(""), "--size", "8M", "--block-sizes", "1M",
                                      "--queue-depths", "4,8", "--threads", "1", "--min-ratio", "0"};
  auto args = base;
  args.insert(args.end(), {"--db", dir.file("bench.db"), "--name", "disk under test"});
  const auto r = run_cli(args);
  if (r.exit_code == 2 && contains(r.err, "fio is not on PATH")) GTEST_SKIP() << r.err;
  if (r.exit_code == 2 && contains(r.err, "does not work in")) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "#  backend  block")) << r.out;
  EXPECT_TRUE(contains(r.out, "(GB/s)")) << r.out;
  EXPECT_TRUE(contains(r.out, "{\"aio\":{\"block_size\":1048576,")) << r.out;
  EXPECT_TRUE(contains(r.out, "# OK: the best point writes at ")) << r.out;
  auto store = sessions::Store::open(dir.file("bench.db"));
  const auto all = sessions::list_sessions(store);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "disk under test");
  EXPECT_EQ(all[0].status, "completed");
  const auto detail = sessions::load_session(store, all[0].id);
  EXPECT_TRUE(contains(detail.config_json, "\"intra_op_parallelism\":")) << detail.config_json;
  EXPECT_EQ(sessions::load_timer_breakdowns_after(store, all[0].id, 0).size(), 2u) << "one timer breakdown per point";
  const auto names = sessions::load_timer_names(store, all[0].id);
  for (const char* timer : {"write", "read", "fio_write", "fio_read"})
    EXPECT_NE(std::find(names.begin(), names.end(), timer), names.end()) << timer;

  auto json_args = base;
  json_args.push_back("--json");
  const auto j = run_cli(json_args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["schema"], "shardscope.bench_io/1");
  ASSERT_EQ(doc["rows"].size(), 2u);
  for (const auto& row : doc["rows"]) {
    EXPECT_GT(row["write_gbps"].get<double>(), 0.0);
    EXPECT_GT(row["fio_read_gbps"].get<double>(), 0.0) << "fio ran on every point";
    EXPECT_GT(row["read_ratio"].get<double>(), 0.0);
  }
  EXPECT_EQ(doc["aio"].size(), 5u);
  EXPECT_TRUE(doc["ok"].get<bool>());
  EXPECT_FALSE(dir.exists("shardscope_bench_io")) << "the benchmark's files were left behind";
}

TEST(BenchIoCli, BadInputIsAUsageErrorNamingTheFlag) {
  auto r = run_cli({"bench", "io"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "bench io needs --path DIR")) << r.err;
  r = run_cli({"bench", "io", "--path", "/tmp", "--block-sizes", "1M,,8M", "--fio", "off"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--block-sizes '1M,,8M' has an empty item")) << r.err;
  r = run_cli({"bench", "io", "--path", "/nonexistent/disk", "--fio", "off"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "/nonexistent/disk")) << r.err;
  r = run_cli({"bench", "disk"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown benchmark 'disk'")) << r.err;
}

TEST(ReportCli, ShowsAnAsyncIoLinePerBackend) {
  const auto r = run_cli({"report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"\nasync_io ", "\nasync_io_uring "}) EXPECT_TRUE(contains(r.out, line)) << r.out;
  const auto j = nlohmann::json::parse(run_cli({"report", "--json"}).out);
  int io = 0;
  for (const auto& k : j["kernels"])
    if (k["family"] == "io") {
      ++io;
      // Either it works (and says what was tried) or it says why not.
      EXPECT_TRUE(k["compatible"].get<bool>() ? !k["detail"].get<std::string>().empty()
                                              : !k["reason"].get<std::string>().empty())
          << k.dump();
    }
  EXPECT_EQ(io, 2);
}

}  // namespace
}  // namespace shardscope::testing
