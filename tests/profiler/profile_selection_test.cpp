// Selections over a session's records: a time range cuts activities to it and keeps the steps it
// overlaps; a step, a kernel or a collective keep their records and the steps they ran in; the
// collectives table; NCCL kernel names to ops; and the --select-time text the CLI reads.
#include <gtest/gtest.h>

#include "profiler/profile_selection.hpp"
#include "profiler/profiler_error.hpp"

namespace shardscope::profiler {
namespace {

using sessions::ActivityKind;

constexpr std::int64_t kBase = 1'800'000'000'000'000'000;  // host Unix ns

sessions::StepMetrics step(int rank, std::int64_t n, double ms) {
  sessions::StepMetrics m;
  m.rank = rank;
  m.step = n;
  m.wall_time = double(kBase + n * 100'000'000) / 1e9;  // step n ends at base + n x 100 ms
  m.step_time_ms = ms;
  return m;
}

// Two steps of one rank: step 1 [10, 100) ms, step 2 [110, 200) ms; a GEMM and an all-reduce in each.
ProfileRecords records() {
  ProfileRecords r;
  r.session_id = 1;
  r.ranks = {0};
  r.steps = {step(0, 1, 90), step(0, 2, 90)};
  r.timers = {{0, 1, {{"forward", 30}}}, {0, 2, {{"forward", 31}}}};
  r.comms = {{0, 1, "all_reduce", 1000, 500, 2, 2, 2}, {0, 2, "all_reduce", 1000, 700, 2, 2, 2},
             {0, 2, "all_gather", 4000, 900, 4, 2, 2}};
  auto kernel = [](const char* name, std::int64_t start_ms, std::int64_t end_ms, std::int64_t s) {
    return sessions::ActivityRecord{ActivityKind::kKernel, name, kBase + start_ms * 1'000'000, kBase + end_ms * 1'000'000,
                                    0, 7, 0, s};
  };
  r.activities[0] = {kernel("sgemm", 20, 40, 1), kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 50, 1),
                     kernel("sgemm", 120, 140, 2), kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 130, 150, 2)};
  return r;
}

TEST(ProfileSelection, AnEmptySelectionKeepsEverything) {
  const ProfileRecords r = records();
  const ProfileRecords kept = select_records(r, {});
  EXPECT_EQ(kept.steps.size(), 2u);
  EXPECT_EQ(kept.activities.at(0).size(), 4u);
  EXPECT_NEAR(double(profile_origin_ns(r) - kBase), 10e6, 1000);  // step 1 starts at 10 ms (a double wall time: 256 ns steps)
}

TEST(ProfileSelection, ATimeRangeCutsActivitiesAndKeepsTheStepsItOverlaps) {
  ProfileSelection s;
  s.time_range_ns = std::make_pair(kBase + 35'000'000, kBase + 125'000'000);
  const ProfileRecords kept = select_records(records(), s);
  ASSERT_EQ(kept.activities.at(0).size(), 3u);  // the first GEMM ended at 40 ms: cut to 35-40
  EXPECT_EQ(kept.activities.at(0)[0].start_ns, kBase + 35'000'000);
  EXPECT_EQ(kept.activities.at(0)[2].end_ns, kBase + 125'000'000);  // the second GEMM cut at 125
  EXPECT_EQ(kept.steps.size(), 2u);  // both steps overlap the range
  const auto analyses = analyze_records(kept);
  EXPECT_DOUBLE_EQ(analyses.top_kernels[0].kernel_time_ms, 5 + 15 + 5);
}

TEST(ProfileSelection, AStepAKernelOrACollectiveKeepTheirRecordsAndSteps) {
  ProfileSelection s;
  s.step = 2;
  ProfileRecords kept = select_records(records(), s);
  EXPECT_EQ(kept.steps.size(), 1u);
  EXPECT_EQ(kept.timers.size(), 1u);
  EXPECT_EQ(kept.comms.size(), 2u);
  EXPECT_EQ(kept.activities.at(0).size(), 2u);
  s = {};
  s.kernel = "sgemm";
  kept = select_records(records(), s);
  EXPECT_EQ(kept.activities.at(0).size(), 2u);
  EXPECT_EQ(kept.steps.size(), 2u);
  s = {};
  s.collective = "all_gather";  // recorded in step 2 only; no NCCL kernel runs it
  kept = select_records(records(), s);
  EXPECT_EQ(kept.comms.size(), 1u);
  EXPECT_TRUE(kept.activities.empty());
  ASSERT_EQ(kept.steps.size(), 1u);
  EXPECT_EQ(kept.steps[0].step, 2);
  s.collective = "all_reduce";
  kept = select_records(records(), s);
  EXPECT_EQ(kept.activities.at(0).size(), 2u);  // its NCCL kernels
  const auto table = summarize_collectives(kept.comms);
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].count, 2);
  EXPECT_DOUBLE_EQ(table[0].total_latency_s, 1200e-6);
}

TEST(ProfileSelection, CollectivesByLatencyAndKernelNamesByOp) {
  const auto table = summarize_collectives(records().comms);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0].op, "all_reduce");  // 1.2 ms before all_gather's 0.9 ms
  EXPECT_DOUBLE_EQ(table[0].mean_algbw_gbps, 2);
  EXPECT_EQ(collective_of_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "reduce_scatter");
  EXPECT_EQ(collective_of_kernel("void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*)"), "all_gather");
  EXPECT_EQ(collective_of_kernel("ampere_sgemm_128x64"), "");
}

TEST(ProfileSelection, TheCliTimeRangeIsMillisecondsFromTheOrigin) {
  ProfileSelection s;
  s.time_range_ns = parse_time_range_ms("1.5:3.25", kBase);
  EXPECT_EQ(s.time_range_ns->first, kBase + 1'500'000);
  EXPECT_EQ(s.time_range_ns->second, kBase + 3'250'000);
  s.step = 4;
  EXPECT_EQ(selection_arguments(s, kBase),
            (std::vector<std::string>{"--select-time", "1.500:3.250", "--select-step", "4"}));
  EXPECT_EQ(describe_selection(s, kBase), "time 1.500-3.250 ms, step 4");
  for (const char* bad : {"1.5", "3:1", "a:b", "1:2x"}) EXPECT_THROW(parse_time_range_ms(bad, kBase), ProfilerError) << bad;
}

}  // namespace
}  // namespace shardscope::profiler
