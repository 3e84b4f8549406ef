// The log parser on a real DeepSpeed 0.19.7 run (tests/sessions/data/deepspeed_0.19.7_zero2_cpu.log:
// ZeRO-2 on 2 CPU ranks with gloo, wall_clock_breakdown, steps_per_print 2, the flops profiler at
// step 3 and comms_logger's log_summary), and on single lines for the edge cases.
#include <fstream>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sessions/import/deepspeed_log_parser.hpp"
#include "sessions/import/step_merger.hpp"

namespace shardscope::sessions {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(SHARDSCOPE_TEST_DATA_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Parsed {
  std::vector<Event> events;
  DeepSpeedLogFacts facts;
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& e : events)
      if (const auto* x = std::get_if<T>(&e)) out.push_back(*x);
    return out;
  }
};

Parsed parse(const std::string& text, int default_rank = -1) {
  DeepSpeedLogParser parser("test.log", default_rank);
  parser.feed_text(text);
  parser.finish();
  return {parser.take_events(), parser.facts()};
}

const Parsed& real_run() {
  static const Parsed parsed = parse(read_fixture("deepspeed_0.19.7_zero2_cpu.log"));
  return parsed;
}

TEST(DeepSpeedLogParser, GlobalTimerLinesCloseOneStepEachWithEngineNames) {
  const auto timers = real_run().all<TimerBreakdown>();
  ASSERT_EQ(timers.size(), 6u);
  for (std::size_t i = 0; i < timers.size(); ++i) EXPECT_EQ(timers[i].step, static_cast<std::int64_t>(i + 1));
  std::map<std::string, double> first;
  for (const auto& t : timers[0].timers) first[t.name] = t.ms;
  EXPECT_DOUBLE_EQ(first.at("forward"), 0.68);
  EXPECT_DOUBLE_EQ(first.at("backward"), 77.35);
  EXPECT_DOUBLE_EQ(first.at("backward_inner"), 1.45);
  EXPECT_DOUBLE_EQ(first.at("backward_allreduce"), 75.78);
  EXPECT_DOUBLE_EQ(first.at("step"), 92.64);
  EXPECT_DOUBLE_EQ(first.at("fwd_microstep"), 0.68);
  EXPECT_DOUBLE_EQ(first.at("optimizer_allgather"), 41.56);
}

// The parser's steps as the importer merges them (StepMerger): a progress line's rate joins the
// step after it.
std::map<std::int64_t, StepMetrics> merged_steps(const std::vector<StepMetrics>& events) {
  StepMerger merger;
  for (const auto& m : events) merger.add(m, false);
  std::map<std::int64_t, StepMetrics> steps;
  for (const auto& e : merger.all())
    if (const auto* m = std::get_if<StepMetrics>(&e)) steps[m->step] = *m;
  return steps;
}

TEST(DeepSpeedLogParser, StepLinesThroughputAndFlopsFillTheirSteps) {
  const auto steps = merged_steps(real_run().all<StepMetrics>());
  ASSERT_EQ(steps.size(), 6u);  // the rate printed after step 6 is not a seventh step
  EXPECT_DOUBLE_EQ(*steps.at(1).step_time_ms, 0.68 + 77.35 + 92.64);
  // "step=2, ..., lr=[0.00063...]" is printed after the scheduler stepped: step 3's rate.
  EXPECT_DOUBLE_EQ(*steps.at(3).lr, 0.0006309297535714573);
  EXPECT_DOUBLE_EQ(*steps.at(5).lr, 0.001);
  EXPECT_FALSE(steps.at(2).lr);  // steps_per_print 2: step 1 has no progress line
  EXPECT_DOUBLE_EQ(*steps.at(4).samples_per_s, 97.36952047309471);
  EXPECT_EQ(*steps.at(4).mem_allocated_bytes, static_cast<std::int64_t>(0.73 * 1073741824.0));
  EXPECT_NEAR(*steps.at(3).tflops, 103.13e3 / 1e12, 1e-15);  // "FLOPS per GPU ... 103.13 KFLOPS"
  for (const auto& [step, m] : steps) EXPECT_EQ(m.rank, 0);
}

TEST(DeepSpeedLogParser, FlopsProfilerFiguresBecomeSeriesAtTheProfiledStep) {
  std::map<std::string, SeriesPoint> figures;
  for (const auto& p : real_run().all<SeriesPoint>()) figures[p.name] = p;
  EXPECT_EQ(figures.at("flops_profiler/params_per_gpu").value, 577);
  EXPECT_EQ(figures.at("flops_profiler/params_per_gpu").step, 3);
  EXPECT_DOUBLE_EQ(figures.at("flops_profiler/fwd_flops_per_gpu").value, 4.48e3);
  EXPECT_DOUBLE_EQ(figures.at("flops_profiler/fwd_macs_per_gpu").value, 2.18e3);
  EXPECT_NEAR(figures.at("flops_profiler/fwd_latency_ms").value, 0.63205, 1e-12);  // 632.05 us
  EXPECT_DOUBLE_EQ(figures.at("flops_profiler/iter_latency_ms").value, 130.32);
  EXPECT_DOUBLE_EQ(figures.at("flops_profiler/fwd_flop_per_s_per_gpu").value, 7.09e6);
  EXPECT_DOUBLE_EQ(figures.at("flops_profiler/samples_second").value, 61.39);
  EXPECT_EQ(figures.at("flops_profiler/world_size").value, 2);
}

TEST(DeepSpeedLogParser, LogSummaryRowsBecomeCommSummaries) {
  const auto rows = real_run().all<CommSummary>();
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].op, "broadcast");
  EXPECT_EQ(rows[0].message_bytes, 4);
  EXPECT_EQ(rows[0].count, 1);
  EXPECT_DOUBLE_EQ(rows[0].total_latency_ms, 15.26);
  EXPECT_EQ(rows[4].op, "all_reduce");
  EXPECT_EQ(rows[4].message_bytes, 2304);  // "2.25 KB"
  EXPECT_EQ(rows[4].count, 6);
  EXPECT_DOUBLE_EQ(rows[4].total_latency_ms, 1042.59);
  EXPECT_DOUBLE_EQ(rows[4].avg_latency_ms, 181.69);
  EXPECT_EQ(rows[6].op, "log_summary_barrier");
  EXPECT_EQ(rows[6].message_bytes, 0);  // "0B"
}

TEST(DeepSpeedLogParser, LauncherLinesGiveRanksPidsExitsAndTheConfigDump) {
  const auto& f = real_run().facts;
  EXPECT_EQ(f.world_size, 2);
  ASSERT_EQ(f.ranks.size(), 2u);
  EXPECT_EQ(f.ranks[0].host, "localhost");
  EXPECT_EQ(f.ranks[1].local_rank, 1);
  EXPECT_EQ(f.ranks[0].pid, 25984);
  EXPECT_EQ(f.ranks[1].pid, 25985);
  EXPECT_EQ(f.exit_codes.at(0), 0);
  EXPECT_EQ(f.exit_codes.at(1), 0);
  EXPECT_EQ(f.train_batch_size, 8);
  ASSERT_FALSE(f.user_config_json.empty());
  EXPECT_EQ(nlohmann::json::parse(f.user_config_json)["zero_optimization"]["stage"], 2);
  ASSERT_GE(f.command.size(), 3u);
  EXPECT_EQ(f.command[2], "-m");
  ASSERT_TRUE(f.first_time && f.last_time);
  EXPECT_NEAR(*f.last_time - *f.first_time, 4 * 60 + 37.398, 1e-3);  // 08:53:47,703 .. 08:58:25,101
  EXPECT_TRUE(f.deepspeed_version.empty());  // this log's level hid the version line: unknown, not guessed
}

TEST(DeepSpeedLogParser, EveryLineIsKeptAsALogLineWithItsLevelAndRank) {
  const auto lines = real_run().all<LogLine>();
  EXPECT_EQ(lines.size(), 289u);
  EXPECT_EQ(lines[0].level, LogLevel::kWarning);  // runner.py's hostfile warning
  EXPECT_EQ(lines[0].rank, -1);
  std::size_t rank0 = 0;
  for (const auto& l : lines) rank0 += l.rank == 0;
  EXPECT_GT(rank0, 20u);
}

TEST(DeepSpeedLogParser, VersionAcceleratorAndSkippedStepsAreRead) {
  const auto parsed = parse(
      "[2026-01-01 10:00:00,000] [INFO] [real_accelerator.py:239:get_accelerator] Setting ds_accelerator to cuda (auto detect)\n"
      "[2026-01-01 10:00:01,000] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: version=0.19.7, git-hash=abc123, git-branch=master\n"
      "[2026-01-01 10:00:02,000] [INFO] [comm.py:758:init_distributed] Initializing TorchBackend in DeepSpeed with backend nccl\n"
      "[2026-01-01 10:00:03,000] [INFO] [logging.py:107:log_dist] [Rank 0] step=1, skipped=0, lr=[0.1, 0.2], mom=[(0.9, 0.95)]\n"
      "[2026-01-01 10:00:04,000] [INFO] [logging.py:107:log_dist] [Rank 0] step=2, skipped=1, lr=[0.1], mom=[(0.9, 0.95)]\n"
      "[2026-01-01 10:00:05,000] [INFO] [logging.py:107:log_dist] [Rank 0] step=3, skipped=1, lr=[0.1], mom=[(0.9, 0.95)]\n");
  EXPECT_EQ(parsed.facts.deepspeed_version, "0.19.7");
  EXPECT_EQ(parsed.facts.deepspeed_git_hash, "abc123");
  EXPECT_EQ(parsed.facts.accelerator, "cuda");
  EXPECT_EQ(parsed.facts.backend, "nccl");
  const auto steps = merged_steps(parsed.all<StepMetrics>());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_FALSE(steps.at(1).skipped);
  EXPECT_TRUE(steps.at(2).skipped);
  EXPECT_FALSE(steps.at(3).skipped);
  EXPECT_DOUBLE_EQ(*steps.at(2).lr, 0.1);  // the first parameter group, printed after step 1
}

TEST(DeepSpeedLogParser, ThePrintedConfigWithPythonInfinityIsRead) {
  // What DeepSpeed prints for a Hugging Face Trainer's filled config (json.dumps of its dict).
  const auto parsed = parse(
      "[2026-12-07 04:00:27,078] [INFO] [config.py:846:print_user_config]   json = {\n"
      "    \"train_batch_size\": 4, \n"
      "    \"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": 4.096000e+03}, \n"
      "    \"steps_per_print\": inf, \n"
      "    \"note\": \"inf nan stay\", \n"
      "    \"x\": -inf, \"y\": NaN\n"
      "}\n"
      "[2026-12-07 04:00:28,000] [INFO] [engine.py:1:f] next\n");
  const auto config = nlohmann::json::parse(parsed.facts.user_config_json);
  EXPECT_EQ(config["train_batch_size"], 4);
  EXPECT_EQ(config["zero_optimization"]["reduce_bucket_size"].get<double>(), 4096.0);
  EXPECT_EQ(config["steps_per_print"].get<double>(), std::numeric_limits<double>::max());
  EXPECT_EQ(config["x"].get<double>(), -std::numeric_limits<double>::max());
  EXPECT_TRUE(config["y"].is_null());
  EXPECT_EQ(config["note"], "inf nan stay");
}

TEST(DeepSpeedLogParser, The0198BatchedPointToPointOpIsATableRowLikeAnyOther) {
  // 0.19.8's comms logger adds batch_isend_irecv (utils/comms_logging.py) with the same columns.
  const std::string header =
      "Comm. Op            Message Size        Count               Total Latency(ms)   Avg Latency(ms)     "
      "tput_avg (Gbps)     busbw_avg (Gbps)    \nbatch_isend_irecv\n";
  const auto parsed = parse(header + "                    2.0 KB              4                   8.00                "
                                     "2.00                0.01                0.01                \n");
  const auto rows = parsed.all<CommSummary>();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].op, "batch_isend_irecv");
  EXPECT_EQ(rows[0].message_bytes, 2048);
  EXPECT_EQ(rows[0].count, 4);
}

TEST(DeepSpeedLogParser, OverflowLinesOfBothReleasesSkipTheirStep) {
  // loss_scaler.py's dynamic scaler (0.19.7 and 0.19.8) and 0.19.8's static one.
  const auto parsed = parse(
      "[2026-01-01 10:00:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
      "Attempted loss scale: 65536, reducing to 32768\n"
      "[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00\n"
      "[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00\n"
      "[2026-01-01 10:00:02,000] [WARNING] [logging.py:107:log_dist] [Rank 0] [deepspeed] OVERFLOW! Skipping step. "
      "Gradients are non-finite, weights were not updated.\n"
      "[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00\n");
  const auto steps = merged_steps(parsed.all<StepMetrics>());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_TRUE(steps.at(1).skipped);
  EXPECT_DOUBLE_EQ(*steps.at(1).loss_scale, 65536);  // the scale the skipped step attempted
  EXPECT_FALSE(steps.at(2).skipped);
  EXPECT_TRUE(steps.at(3).skipped);
  EXPECT_FALSE(steps.at(3).loss_scale);
}

TEST(DeepSpeedLogParser, VerboseCommLinesAreCollectivesOfTheirStep) {
  const auto parsed = parse(
      "[Rank 0] comm op: all_reduce | time (ms): 1.50 | msg size: 2.0 KB | algbw (Gbps): 16.00 | busbw (Gbps): 8.00\n"
      "[Rank 0] time (ms) | fwd: 1.00 | bwd: 2.00 | step: 3.00\n"
      "[Rank 0] comm op: all_gather_into_tensor | time (ms): 0.25 | msg size: 1.0 MB | algbw (Gbps): 8.00 | busbw (Gbps): 4.00\n");
  const auto comms = parsed.all<CommRecord>();
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].step, 1);
  EXPECT_EQ(comms[0].bytes, 2048);
  EXPECT_DOUBLE_EQ(comms[0].latency_us, 1500);
  EXPECT_DOUBLE_EQ(comms[0].algbw_gbps, 2.0);  // Gbit/s -> GB/s
  EXPECT_EQ(comms[1].step, 2);
  EXPECT_EQ(comms[1].bytes, 1 << 20);
}

TEST(DeepSpeedLogParser, GarbageAndHugeLinesAreKeptAsLogLinesOnly) {
  const std::string huge(200000, 'x');
  const auto parsed = parse("step=, skipped=zz, lr=[\n[Rank 9999999999] time (ms) | a\nComm. Op Message Size\n  1 2\n" + huge);
  EXPECT_TRUE(parsed.all<StepMetrics>().empty());
  EXPECT_TRUE(parsed.all<CommSummary>().empty());
  const auto lines = parsed.all<LogLine>();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines.back().text.size(), 64u << 10);  // cut at 64 KiB
}

// Found by deepspeed_log_fuzzer: a message size beyond int64 ("4.0YB") was cast to int64 (UB).
TEST(DeepSpeedLogParser, ACommSizeBeyondInt64IsNotARow) {
  const std::string header =
      "Comm. Op            Message Size        Count               Total Latency(ms)   Avg Latency(ms)     "
      "tput_avg (Gbps)     busbw_avg (Gbps)    \nbroadcast\n";
  const auto parsed = parse(header + "                    4.0YB               1                   15.26               "
                                     "15.26               0.00                0.00                \n"
                                     "                    128.0 B             2                   9.13                "
                                     "4.57                0.00                0.00                \n");
  const auto rows = parsed.all<CommSummary>();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].message_bytes, 128);
}

TEST(StepMerger, MonitorValuesWinAndTheLogFillsGaps) {
  StepMerger merger;
  StepMetrics log_row{0, 2, 0, 10.0, std::nullopt, 0.1, std::nullopt, std::nullopt, false, 80.0};
  StepMetrics csv_row;
  csv_row.step = 2;
  csv_row.lr = 0.123456789;
  merger.add(log_row, false);
  merger.add(csv_row, true);
  merger.add(TimerBreakdown{0, 2, {{"forward", 1.0}}}, false);
  merger.add(TimerBreakdown{0, 2, {{"forward", 1.23456}, {"step", 2.0}}}, true);
  const auto rows = merger.take_changed();
  ASSERT_EQ(rows.size(), 2u);
  const auto& timers = std::get<TimerBreakdown>(rows[0]);
  EXPECT_DOUBLE_EQ(timers.timers[0].ms, 1.23456);
  const auto& m = std::get<StepMetrics>(rows[1]);
  EXPECT_DOUBLE_EQ(*m.lr, 0.123456789);
  EXPECT_DOUBLE_EQ(*m.step_time_ms, 10.0);
  EXPECT_DOUBLE_EQ(*m.samples_per_s, 80.0);
  EXPECT_TRUE(merger.take_changed().empty());
}

}  // namespace
}  // namespace shardscope::sessions
