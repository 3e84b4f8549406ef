// The run doctor through the CLI (issue 28 items 5 and 6): `sessions import --flight-record` on
// the real gloo dumps of data/flight_record/ (rank 2 skipped an all-reduce), and `sessions
// compare` listing two sessions' findings side by side with what is new and gone.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

namespace fs = std::filesystem;
using shardscope::testing::run_cli;
const std::string kDumps = SHARDSCOPE_TEST_DATA_DIR "/flight_record";

// The pickle dumps alone in a folder of their own (data/flight_record also holds the JSON ones).
std::string dump_folder(const std::string& stem) {
  const fs::path folder = testing::temp_path(stem);
  fs::create_directories(folder);
  for (int r = 0; r < 3; ++r) {
    const std::string name = "nccl_trace_rank_" + std::to_string(r);
    fs::copy_file(kDumps + "/" + name, folder / name);
  }
  return folder.string();
}

Finding finding(const std::string& kind, std::vector<int> ranks, std::int64_t step, const std::string& summary) {
  Finding f;
  f.kind = kind;
  f.severity = "error";
  f.ranks = std::move(ranks);
  f.first_step = f.last_step = step;
  f.summary = summary;
  return f;
}

TEST(FlightRecordCli, ImportNamesTheRankThatSkippedTheCollectiveAndStoresIt) {
  const std::string db = testing::temp_path("flight_record_cli") + ".db";
  const auto text = run_cli({"sessions", "import", "--db", db, "--flight-record", dump_folder("fr_dumps")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("flight records: 3 dump(s) of rank(s) 0 1 2 (pickle, format 2.10), 19 collectives stored "
                          "in new session 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[error] hang: hang in all_reduce #6 (make_flight_record_dumps.py:51 in rank_main, 4000 B "
                          "Float), group default_pg (pg 0): ?:0, ?:1 wait(s) since"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("never entered by ?:2"), std::string::npos) << text.out;
  const auto show = run_cli({"sessions", "show", "1", "--db", db, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  ASSERT_EQ(j["findings"].size(), 1u) << "the stored hang is not diagnosed a second time from the stored marks";
  EXPECT_EQ(j["findings"][0]["ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(j["detail"]["status"], "hung");
  EXPECT_EQ(j["detail"]["origin"], "flight-recorder-import");
  testing::remove_store(db);
}

TEST(FlightRecordCli, IntoAStoredSessionItsHostsNameTheRanks) {
  const std::string db = testing::temp_path("flight_record_into") + ".db";
  {
    Store store = Store::open_or_create(db);
    auto start = testing::sample_run_start("watched", 3, "{}");
    for (auto& r : start.ranks) r.host = r.rank < 2 ? "node-a" : "node-b";
    StoreWriter(store).write("uid-watched-0001", {start});
  }
  const auto json = run_cli({"sessions", "import", "--db", db, "--session", "watched", "--json", "--flight-record",
                             kDumps + "/nccl_trace_rank_0", "--flight-record", kDumps + "/nccl_trace_rank_1",
                             "--flight-record", "2=" + kDumps + "/nccl_trace_json_rank_2"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out)["flight_record"];
  EXPECT_EQ(j["new_session"], false);
  EXPECT_EQ(j["dumps"][2]["format"], "json");
  EXPECT_NE(j["finding"]["summary"].get<std::string>().find("node-a:0, node-a:1 wait(s)"), std::string::npos) << j;
  EXPECT_NE(j["finding"]["summary"].get<std::string>().find("never entered by node-b:2"), std::string::npos) << j;
  const auto show = run_cli({"sessions", "show", "watched", "--db", db});
  EXPECT_NE(show.out.find("never entered by node-b:2"), std::string::npos) << show.out;
  testing::remove_store(db);
}

TEST(FlightRecordCli, BesideADeepSpeedLogTheDumpsGoIntoTheImportedRun) {
  const std::string db = testing::temp_path("flight_record_deepspeed") + ".db";
  const auto r = run_cli({"sessions", "import", "--db", db, "--json", "--log",
                          SHARDSCOPE_SOURCE_DIR "/tests/sessions/data/deepspeed_0.19.7_zero2_cpu.log",
                          "--flight-record", dump_folder("fr_beside_log")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"], 6) << "the DeepSpeed import's own counts come first";
  EXPECT_EQ(j["flight_record"]["session_id"], j["session_id"]);
  EXPECT_EQ(j["flight_record"]["new_session"], false);
  // The log's two ranks ran on localhost; the third dump's rank is one the log does not know.
  EXPECT_NE(j["flight_record"]["finding"]["summary"].get<std::string>().find("localhost:0, localhost:1 wait(s)"),
            std::string::npos) << j;
  const auto show = nlohmann::json::parse(run_cli({"sessions", "show", "1", "--db", db, "--json"}).out);
  EXPECT_EQ(show["detail"]["origin"], "deepspeed-import");
  EXPECT_EQ(show["findings"][0]["ranks"], nlohmann::json::array({2}));
  testing::remove_store(db);
}

TEST(FlightRecordCli, ADamagedDumpIsRefusedNamingTheFileAndNothingIsWritten) {
  const std::string folder = dump_folder("fr_damaged");
  const std::string cut = folder + "/nccl_trace_rank_1";
  testing::write_bytes(cut, testing::read_bytes(cut).substr(0, 700));
  const std::string db = testing::temp_path("flight_record_damaged") + ".db";
  const auto r = run_cli({"sessions", "import", "--db", db, "--flight-record", folder});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(cut + ": pickle byte"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(db)) << "a refused import leaves no store behind";
  const auto usage = run_cli({"sessions", "import", "--db", db, "--session", "1", "--log", cut});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("--session adds flight recorder dumps"), std::string::npos) << usage.err;
}

TEST(FindingsCompareCli, CompareListsEachSessionsFindingsAndWhatIsNewAndGone) {
  const std::string db = testing::temp_path("findings_compare_cli") + ".db";
  {
    Store store = Store::open_or_create(db);
    StoreWriter writer(store);
    writer.write("uid-before-0001", {testing::sample_run_start("before", 4, "{}"),
                                     finding("hang", {2}, 3, "hang in all_reduce #6; never entered by node-b:2"),
                                     finding("straggler", {1}, 40, "node-a:1 is 30 % slow in forward")});
    writer.write("uid-after-00001", {testing::sample_run_start("after", 4, "{}"),
                                     finding("straggler", {1}, 55, "node-a:1 is 28 % slow in forward"),
                                     finding("overflow_streak", {0, 1, 2, 3}, 9, "6 skipped steps")});
  }
  const auto text = run_cli({"sessions", "compare", "before", "after", "--db", db});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("findings: 2 in #1 before, 2 in #2 after; #2 against #1: 1 new, 1 gone, 1 kept"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("hang             2           error, step 3   (gone)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("error, step 55 (kept)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("error, step 9 (new)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("#2 after: overflow_streak [0, 1, 2, 3] (new): 6 skipped steps"), std::string::npos)
      << text.out;
  const auto json = run_cli({"sessions", "compare", "before", "after", "--db", db, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto f = nlohmann::json::parse(json.out)["findings"];
  EXPECT_EQ(f["baseline"], 1);
  ASSERT_EQ(f["rows"].size(), 3u);
  EXPECT_EQ(f["rows"][0]["kind"], "hang");
  EXPECT_EQ(f["rows"][0]["cells"][1]["change"], "gone");
  EXPECT_TRUE(f["rows"][0]["cells"][1]["finding"].is_null());
  EXPECT_EQ(f["rows"][2]["cells"][1]["change"], "new");
  EXPECT_EQ(f["sessions"][1]["findings"][0]["first_step"], 55);
  testing::remove_store(db);
}

}  // namespace
}  // namespace shardscope::sessions
