// `shardscope sessions ...` run as a user would: tables, --json, export, delete, and exit code 2
// with a clear message for every kind of bad file given to every subcommand.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/app/cli_process.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using shardscope::testing::run_cli;

class SessionsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::temp_path("cli") + ".db";
    Store store = Store::open_or_create(db_);
    StoreWriter writer(store);
    for (const char* name : {"alpha", "beta"}) {
      std::vector<Event> events{testing::sample_run_start(name, 2, std::string(R"({"zero_optimization": {"stage": )") +
                                                                        (name[0] == 'a' ? "2" : "3") + "}}")};
      for (auto& e : testing::sample_steps(2, 10)) events.push_back(e);
      events.push_back(LogLine{0, 1, LogLevel::kInfo, "line with, a comma and \"quotes\""});
      ActivityBatch batch;
      ActivityRecord kernel;
      kernel.name = "ampere_bf16_gemm";
      kernel.start_ns = 1000, kernel.end_ns = 5000, kernel.step = 3;
      kernel.grid = Dim3{132, 2, 1}, kernel.block = Dim3{256, 1, 1};
      kernel.registers_per_thread = 168, kernel.correlation_id = 77;
      batch.records.push_back(kernel);
      events.push_back(batch);
      writer.write(std::string("uid-") + name + "-0000", events);
    }
  }
  void TearDown() override { testing::remove_store(db_); }
  std::string db_;
};

TEST_F(SessionsCli, ListPrintsATableAndJson) {
  const auto table = run_cli({"sessions", "list", "--db", db_});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("alpha"), std::string::npos);
  EXPECT_NE(table.out.find("2 sessions"), std::string::npos);
  const auto json = run_cli({"sessions", "list", "--db", db_, "--name", "bet", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0]["name"], "beta");
  EXPECT_EQ(parsed[0]["last_step"], 9);
}

TEST_F(SessionsCli, ShowAndCompare) {
  const auto show = run_cli({"sessions", "show", "alpha", "--db", db_, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = nlohmann::json::parse(show.out);
  EXPECT_DOUBLE_EQ(j["summary"]["median_step_ms"].get<double>(), 109.0);
  EXPECT_EQ(j["detail"]["config"]["zero_optimization"]["stage"], 2);
  const auto text = run_cli({"sessions", "show", "alpha", "--db", db_});
  EXPECT_NE(text.out.find("step time median / p90 (ms)"), std::string::npos) << text.out;
  const auto compare = run_cli({"sessions", "compare", "alpha", "beta", "--db", db_, "--json", "--curves",
                                "--smoothing", "twema", "--weight", "0.5"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  const auto c = nlohmann::json::parse(compare.out);
  EXPECT_EQ(c["config_diff"][0]["path"], "zero_optimization.stage");
  EXPECT_EQ(c["config_diff"][0]["values"][1], "3");
  EXPECT_FALSE(c["curves"].empty());
  const auto table = run_cli({"sessions", "compare", "alpha", "beta", "--db", db_});
  EXPECT_NE(table.out.find("config diff"), std::string::npos);
  EXPECT_EQ(run_cli({"sessions", "compare", "alpha", "--db", db_}).exit_code, 2);
  EXPECT_EQ(run_cli({"sessions", "compare", "alpha", "beta", "--db", db_, "--smoothing", "gauss"}).exit_code, 2);
}

// The line of `text` that starts with `start`, "" when none does.
std::string line_starting(const std::string& text, const std::string& start) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(start, 0) == 0) return line;
  return "";
}

// Where `part` starts in `line`, counted in characters as a terminal shows them (UTF-8 code points).
std::size_t display_column(const std::string& line, const std::string& part) {
  const auto at = line.find(part);
  if (at == std::string::npos) return std::string::npos;
  return static_cast<std::size_t>(std::count_if(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(at),
                                                [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

TEST_F(SessionsCli, CompareShowsTheHostsClockOffsets) {
  {
    Store store = Store::open(db_);
    StoreWriter writer(store);
    writer.write("uid-clock-a", testing::two_host_run("clock-a", {0.0, 0.0002}, {0.0123, 0.0002}));
    writer.write("uid-clock-b", testing::two_host_run("clock-b", {0.0, 0.0002}, {-0.0456, 0.0002}));
  }
  const auto table = run_cli({"sessions", "compare", "clock-a", "clock-b", "--db", db_});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const std::string row = line_starting(table.out, "run.hosts[1].clock_offset ");
  EXPECT_NE(row.find("+12.3 ms (\u00b1 0.2 ms)"), std::string::npos) << table.out;
  EXPECT_NE(row.find("-45.6 ms (\u00b1 0.2 ms)"), std::string::npos) << table.out;
  EXPECT_EQ(line_starting(table.out, "run.hosts[0].clock_offset "), "") << "equal offsets are not a difference";
  // The columns stay aligned on screen although the offsets carry a two-byte character.
  const auto environment = table.out.find("environment diff:");
  ASSERT_NE(environment, std::string::npos) << table.out;
  const std::string header = line_starting(table.out.substr(environment), "path ");
  EXPECT_EQ(display_column(row, "-45.6"), display_column(header, "#4 clock-b")) << table.out;
  const auto all = run_cli({"sessions", "compare", "clock-a", "clock-b", "--db", db_, "--all"});
  EXPECT_NE(line_starting(all.out, "run.hosts[0].clock_offset ").find("+0.0 ms"), std::string::npos) << all.out;

  const auto json = run_cli({"sessions", "compare", "clock-a", "clock-b", "--db", db_, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto rows = nlohmann::json::parse(json.out)["environment_diff"];
  const auto offset = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r["path"] == "run.hosts[1].clock_offset"; });
  ASSERT_NE(offset, rows.end()) << json.out;
  EXPECT_EQ((*offset)["values"], nlohmann::json({"+12.3 ms (\u00b1 0.2 ms)", "-45.6 ms (\u00b1 0.2 ms)"}));
}

TEST_F(SessionsCli, ExportWritesCsvPerTableAndOneJsonDocument) {
  const auto dir = testing::temp_path("csv");
  const auto csv = run_cli({"sessions", "export", "alpha", "--db", db_, "--csv", dir});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  for (const char* table : {"sessions", "ranks", "tags", "steps", "timers", "comms", "activities", "nvtx_ranges", "logs"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + table + ".csv")) << table;
  const auto steps = testing::read_bytes(dir + "/steps.csv");
  EXPECT_EQ(steps.substr(0, steps.find('\n')),
            "session_id,step,rank,wall_time,step_time_ms,loss,lr,loss_scale,grad_norm,skipped,samples_per_s,"
            "tokens_per_s,tflops,mem_allocated,mem_reserved,mem_peak");
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), 21);  // header + 10 steps x 2 ranks
  EXPECT_NE(testing::read_bytes(dir + "/logs.csv").find("\"line with, a comma and \"\"quotes\"\"\""), std::string::npos);
  // The CUPTI launch details come along (the memcpy throughput column empty for a kernel).
  const auto activities = testing::read_bytes(dir + "/activities.csv");
  EXPECT_EQ(activities.substr(0, activities.find('\n')),
            "session_id,rank,kind,name,start_ns,end_ns,device,stream,bytes,step,grid_x,grid_y,grid_z,block_x,block_y,"
            "block_z,registers_per_thread,correlation_id,throughput_gbps");
  EXPECT_NE(activities.find(",kernel,ampere_bf16_gemm,1000,5000,0,0,0,3,132,2,1,256,1,1,168,77,\n"), std::string::npos)
      << activities;
  const auto file = testing::temp_path("export") + ".json";
  ASSERT_EQ(run_cli({"sessions", "export", "--all", "--db", db_, "--json", file}).exit_code, 0);
  const auto doc = nlohmann::json::parse(testing::read_bytes(file));
  ASSERT_EQ(doc["sessions"].size(), 2u);
  EXPECT_EQ(doc["sessions"][0]["session"]["name"], "alpha");
  EXPECT_EQ(doc["sessions"][1]["steps"].size(), 20u);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(file);
}

TEST_F(SessionsCli, DeleteNeedsYesInScriptsAndRemovesOnlyTheNamedSession) {
  const auto refused = run_cli({"sessions", "delete", "alpha", "--db", db_});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--yes"), std::string::npos) << refused.err;
  // The fixtures never ended (no RunEnd): a collector could still be writing them.
  const auto running = run_cli({"sessions", "delete", "alpha", "--db", db_, "--yes"});
  EXPECT_EQ(running.exit_code, 2);
  EXPECT_NE(running.err.find("still running"), std::string::npos) << running.err;
  EXPECT_NE(running.err.find("--force"), std::string::npos) << running.err;
  const auto done = run_cli({"sessions", "delete", "alpha", "--db", db_, "--yes", "--force"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  const auto left = nlohmann::json::parse(run_cli({"sessions", "list", "--db", db_, "--json"}).out);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["name"], "beta");
  EXPECT_EQ(run_cli({"sessions", "delete", "alpha", "--db", db_, "--yes", "--force"}).exit_code, 2);  // gone
}

TEST_F(SessionsCli, RenameTagAndTheRunDiff) {
  const auto renamed = run_cli({"sessions", "rename", "alpha", "alpha zero2", "--db", db_});
  ASSERT_EQ(renamed.exit_code, 0) << renamed.err;
  EXPECT_NE(renamed.out.find("is now 'alpha zero2'"), std::string::npos) << renamed.out;
  const auto tagged = run_cli({"sessions", "tag", "alpha zero2", "--db", db_, "--add", "sweep", "--remove", "baseline"});
  ASSERT_EQ(tagged.exit_code, 0) << tagged.err;
  EXPECT_NE(tagged.out.find("tags: sweep"), std::string::npos) << tagged.out;
  EXPECT_NE(run_cli({"sessions", "list", "--db", db_, "--tag", "sweep", "--json"}).out.find("alpha zero2"), std::string::npos);
  const auto bad = run_cli({"sessions", "tag", "beta", "--db", db_, "--add", "a,b"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("without commas"), std::string::npos) << bad.err;
  EXPECT_EQ(run_cli({"sessions", "rename", "beta", "", "--db", db_}).exit_code, 2);
  // The fixtures' command lines differ in --config: the run diff says so.
  const auto compare = run_cli({"sessions", "compare", "alpha zero2", "beta", "--db", db_});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find("run diff:"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("train.config"), std::string::npos) << compare.out;
}

TEST_F(SessionsCli, ProfileSelectionsNarrowTheAnalyses) {
  const auto step3 = run_cli({"sessions", "show", "alpha", "--db", db_, "--profile", "--select-step", "3", "--json"});
  ASSERT_EQ(step3.exit_code, 0) << step3.err;
  const auto profile = nlohmann::json::parse(step3.out).at("profile");
  EXPECT_EQ(profile.at("selection"), "step 3");
  EXPECT_EQ(profile.at("stragglers").at("steps").size(), 1u);
  EXPECT_EQ(profile.at("collectives").at(0).at("count"), 2);  // one all_reduce per rank in step 3
  const auto none = run_cli({"sessions", "show", "alpha", "--db", db_, "--profile", "--select-kernel", "no_such", "--json"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out).at("profile").at("top_kernels").size(), 0u);
  const auto bad = run_cli({"sessions", "show", "alpha", "--db", db_, "--profile", "--select-time", "5:1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--select-time"), std::string::npos) << bad.err;
  EXPECT_EQ(run_cli({"sessions", "show", "alpha", "--db", db_, "--select-step", "3"}).exit_code, 2);  // needs --profile
}

// Every subcommand, given each kind of bad file, exits 2 with a message naming the problem.
TEST_F(SessionsCli, BadFilesGiveAClearErrorAndExitCode2Everywhere) {
  const auto text = testing::temp_path("text") + ".db";
  testing::write_bytes(text, "this is a CSV, not a database\n1,2,3\n");
  const auto foreign = testing::temp_path("foreign") + ".db";
  {
    SqliteDb db(foreign, true, false);
    db.exec("CREATE TABLE t(x)");
  }
  const auto truncated = testing::temp_path("truncated") + ".db";
  const auto corrupted = testing::temp_path("corrupted") + ".db";
  {
    Store big = Store::open_or_create(truncated);
    StoreWriter writer(big);
    writer.write("u", testing::sample_steps(4, 300));
    big.checkpoint();
  }
  const auto bytes = testing::read_bytes(truncated);
  testing::write_bytes(truncated, bytes.substr(0, bytes.size() / 3));
  std::string damaged = bytes;
  for (std::size_t i = 4096; i < damaged.size(); i += 4096)
    for (std::size_t j = 0; j < 256 && i + j < damaged.size(); ++j) damaged[i + j] = static_cast<char>(j * 7);
  testing::write_bytes(corrupted, damaged);
  const std::vector<std::pair<std::string, std::string>> files{
      {text, "not an SQLite database"}, {foreign, "not a ShardScope session store"},
      {truncated, "truncated"}, {corrupted, "corrupt"}, {db_ + ".missing", "no session store"}};
  const std::vector<std::vector<std::string>> commands{
      {"sessions", "list"}, {"sessions", "show", "1"}, {"sessions", "compare", "1", "2"},
      {"sessions", "export", "1", "--json", "-"}, {"sessions", "delete", "1", "--yes"}};
  std::vector<std::string> before;
  for (const auto& f : files) before.push_back(testing::read_bytes(f.first));
  // 25 runs of the binary; started together because each start loads LibTorch (~1 s).
  struct Job {
    std::string file, phrase;
    std::vector<std::string> args;
    std::future<shardscope::testing::ProcessResult> result;
  };
  std::vector<Job> jobs;
  for (const auto& [file, phrase] : files)
    for (auto args : commands) {
      args.insert(args.end(), {"--db", file});
      jobs.push_back({file, phrase, args, std::async(std::launch::async, [args] { return run_cli(args); })});
    }
  for (auto& job : jobs) {
    const auto result = job.result.get();
    const std::string what = job.args[1] + " " + job.file + ": " + result.err;
    EXPECT_EQ(result.exit_code, 2) << what;
    EXPECT_NE(result.err.find(job.phrase), std::string::npos) << what;
    EXPECT_NE(result.err.find(job.file), std::string::npos) << "the message names the file: " << what;
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(testing::read_bytes(files[i].first), before[i]) << files[i].first << " was modified";
  for (const auto& f : {text, foreign, truncated, corrupted}) testing::remove_store(f);
}

// Issue 22's campaign, as a user at a shell would meet it.
TEST_F(SessionsCli, AFifoAsDbIsRefusedAtOnceWithExit2) {
  const std::string fifo = testing::temp_path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto r = run_cli({"sessions", "list", "--db", fifo});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(fifo + " is a FIFO (named pipe), not a session store file"), std::string::npos) << r.err;
  ::unlink(fifo.c_str());
}

TEST_F(SessionsCli, AnImportOfAFifoLogIsRefusedAtOnceWithExit2) {
  const std::string fifo = testing::temp_path("fifo_log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto r = run_cli({"sessions", "import", "--db", db_, "--log", fifo});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(fifo + ": is a FIFO (named pipe), not a file to import"), std::string::npos) << r.err;
  ::unlink(fifo.c_str());
}

// `sessions import --deepspeed-version`: the rules that resolve the run's config, printed and
// recorded in the session's origin details; an unsupported version is refused before any reading.
TEST_F(SessionsCli, ImportSaysWhoseRulesItAppliedAndRecordsThem) {
  const std::string log = std::string(SHARDSCOPE_TEST_DATA_DIR) + "/deepspeed_0.19.7_zero2_cpu.log";
  auto r = run_cli({"sessions", "import", "--db", db_, "--log", log, "--name", "v8", "--deepspeed-version", "0.19.8",
                    "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto imported = nlohmann::json::parse(r.out);
  EXPECT_EQ(imported["deepspeed_version"], "0.19.8");
  EXPECT_EQ(imported["deepspeed_rules"], "DeepSpeed 0.19.8 rules (--deepspeed-version)");
  r = run_cli({"sessions", "show", "v8", "--db", db_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["detail"]["origin_details"]["deepspeed_version"], "0.19.8") << r.out;

  r = run_cli({"sessions", "import", "--db", db_, "--log", log, "--name", "v7", "--deepspeed-version", "0.19.7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("rules: DeepSpeed 0.19.7 rules (--deepspeed-version)\n", 0), 0u) << r.out;

  r = run_cli({"sessions", "import", "--db", db_, "--log", log, "--deepspeed-version", "0.20.0"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("0.19.7, 0.19.8"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(run_cli({"sessions", "list", "--db", db_, "--json"}).out).size(), 4u)
      << "alpha, beta, v8 and v7: the refused import wrote nothing";
}

TEST_F(SessionsCli, ExportRefusesASymlinkTargetAndLeavesWhatItPointsTo) {
  const std::string victim = testing::temp_path("victim"), link = testing::temp_path("link");
  testing::write_bytes(victim, "keep me");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  const auto r = run_cli({"sessions", "export", "--all", "--db", db_, "--json", link});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(link + " exists and is a symbolic link; an export replaces only a regular file"),
            std::string::npos) << r.err;
  EXPECT_EQ(testing::read_bytes(victim), "keep me");
  ::unlink(link.c_str());
}

TEST_F(SessionsCli, NamesAndHostsFromTheFileArePrintedWithEscapesVisible) {
  {
    Store store = Store::open(db_);
    StoreWriter writer(store);
    RunStart start = testing::sample_run_start("evil\x1b]0;owned\x07\x1b[2J", 1, "{}");
    start.ranks.at(0).host = "host\x1b[31m";
    writer.write("uid-evil", {start});
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sessions", "list", "--db", db_}, {"sessions", "show", "uid-evil", "--db", db_}}) {
    const auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal: " << args[1];
    EXPECT_NE(r.out.find("evil\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << r.out;
  }
  const auto json = run_cli({"sessions", "list", "--db", db_, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(json.out)[0]["name"], "evil\x1b]0;owned\x07\x1b[2J") << "JSON keeps the exact text";
}

TEST_F(SessionsCli, ADamagedTablePrintsOneShortLine) {
  {
    SqliteDb db(db_, false, false);
    db.exec("ALTER TABLE step_stats RENAME COLUMN step_time_ms_n TO gone");  // what the summary reads
  }
  const auto r = run_cli({"sessions", "show", "alpha", "--db", db_});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_LT(r.err.size(), 400u) << r.err;
  EXPECT_NE(r.err.find("its tables are damaged (SQLite: no such column: step_time_ms"), std::string::npos) << r.err;
}

// Issue 31: these exited 1 where the README's convention says 2 (an input that is not usable).
TEST_F(SessionsCli, BadPathsExitTwoNamingThem) {
  const auto csv = run_cli({"sessions", "export", "alpha", "--db", db_, "--csv", "/dev/null"});
  EXPECT_EQ(csv.exit_code, 2) << csv.err;
  EXPECT_NE(csv.err.find("--csv /dev/null exists and is not a folder"), std::string::npos) << csv.err;
  const std::string link = testing::temp_path("cli_link") + ".db";
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink("/nonexistent/x.db", link.c_str()), 0);
  const std::string config = testing::temp_path("cli_ds") + ".json";
  std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 1})";
  const std::string out = testing::temp_path("cli_watch_out");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"sessions", "list", "--db", link},
           {"watch", "--db", link, "--out", out, "--", "true", "--deepspeed_config", config}}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(link + " is a symbolic link"), std::string::npos) << r.err;
  }
  struct stat st {};
  EXPECT_EQ(::lstat(link.c_str(), &st), 0) << "the link is kept";
  ::unlink(link.c_str());
  std::filesystem::remove(config);
  std::filesystem::remove_all(out);
}


// Traces are streamed with progress on stderr (issue 35 item 5): a line when each trace starts,
// then at most two a second, each naming the file, the pass and the bytes read of all traces.
TEST_F(SessionsCli, ATraceImportReportsItsProgressOnStderr) {
  const std::string trace = testing::temp_path("progress_rank3") + ".json";
  std::ofstream(trace) << R"({"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 9, "tid": 9, "ts": 10.0, "dur": 90.0},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.0, "dur": 5.0, "args": {"stream": 7}}],
    "baseTimeNanoseconds": 1790000000000000000})";
  auto r = run_cli({"sessions", "import", "--db", db_, "--trace", trace, "--name", "traced"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sessions import: trace 1/1 progress_rank3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pass 1/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sessions import: writing"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 GPU activities"), std::string::npos) << r.out;
  r = run_cli({"sessions", "import", "--db", db_, "--trace", trace, "--name", "quiet", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace shardscope::sessions
