// The profile analyses on small recorded sessions whose every number is worked out by hand below.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/profile_analyses.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::profiler {
namespace {

using namespace sessions;

constexpr std::int64_t kUs = 1000;  // activity times below are written in microseconds

ActivityRecord kernel(const std::string& name, std::int64_t start_us, std::int64_t end_us, std::int64_t stream,
                      int device = 0) {
  ActivityRecord r;
  r.kind = ActivityKind::kKernel;
  r.name = name;
  r.start_ns = start_us * kUs;
  r.end_ns = end_us * kUs;
  r.stream = stream;
  r.device = device;
  return r;
}

// Three ranks, steps 0-3.
//  step time (ms)  rank 0: 100 110 120 130   rank 1: 105 100 140 130   rank 2: 100 x4
//  timers  rank 0: forward 30, backward 50 (inner 35, allreduce 15), step 10  -> other 10 20 30 40
//          rank 1: forward 30, backward 60, reduce_scatter 4, step 10         -> other 5 0 40 30
//  collectives rank 1: step 0 10 ms, step 1 10 ms, step 2 6 + 2 ms
//  rank 0's profiled window (device 0): see profiled_window().
std::vector<Event> recorded_events() {
  std::vector<Event> events;
  RunStart start;
  start.name = "profiled";
  start.world_size = 3;
  for (int r = 0; r < 3; ++r) start.ranks.push_back({r, r, "node-a", 100 + r, "cuda:" + std::to_string(r)});
  events.push_back(start);
  const double times[3][4] = {{100, 110, 120, 130}, {105, 100, 140, 130}, {100, 100, 100, 100}};
  for (std::int64_t step = 0; step < 4; ++step) {
    events.push_back(TimerBreakdown{0, step, {{"forward", 30}, {"backward", 50}, {"backward_inner", 35},
                                              {"backward_allreduce", 15}, {"step", 10}}});
    events.push_back(TimerBreakdown{1, step, {{"forward", 30}, {"backward", 60}, {"reduce_scatter", 4}, {"step", 10}}});
    for (int r = 0; r < 3; ++r) {
      StepMetrics m;
      m.rank = r;
      m.step = step;
      m.step_time_ms = times[r][step];
      events.push_back(m);
    }
  }
  events.push_back(CommRecord{1, 0, "reduce_scatter", 1 << 20, 10000, 0, 0, 3});
  events.push_back(CommRecord{1, 1, "reduce_scatter", 1 << 20, 10000, 0, 0, 3});
  events.push_back(CommRecord{1, 2, "reduce_scatter", 1 << 20, 6000, 0, 0, 3});
  events.push_back(CommRecord{1, 2, "all_gather", 1 << 20, 2000, 0, 0, 3});
  return events;
}

//  stream 7:  gemm [0,1000)  gemm [1500,1800)  HtoD [2500,3000)  elementwise [3000,3200)
//  stream 13: AllReduce [500,2000)  ReduceScatter [3100,3600)                         (microseconds)
//  comm union 2000 us; overlapped by compute [500,1000) + [1500,1800) + [3100,3200) = 900 us.
//  busy [0,2000) + [2500,3600) = 3100 us of a 3600 us window: idle 500 us.
ActivityBatch profiled_window() {
  ActivityBatch batch;
  batch.rank = 0;
  batch.records = {kernel("gemm", 0, 1000, 7), kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 500, 2000, 13),
                   kernel("gemm", 1500, 1800, 7), kernel("elementwise", 3000, 3200, 7),
                   kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 3100, 3600, 13)};
  ActivityRecord copy;
  copy.kind = ActivityKind::kMemcpy;
  copy.name = "HtoD";
  copy.start_ns = 2500 * kUs;
  copy.end_ns = 3000 * kUs;
  copy.stream = 7;
  copy.bytes = 4096;
  batch.records.push_back(copy);
  return batch;
}

class ProfileAnalysesTest : public ::testing::Test {
 protected:
  ProfileAnalyses analyze(bool with_window, const AnalysisOptions& options = {}) {
    Store store = Store::open_or_create(dir_.file("runs" + std::to_string(stores_++) + ".db"));
    auto events = recorded_events();
    if (with_window) events.push_back(profiled_window());
    StoreWriter(store).write("uid-profiled", events);
    return analyze_session(store, 1, options);
  }
  test::TempDir dir_;
  int stores_ = 0;
};

TEST_F(ProfileAnalysesTest, PhasesPerStepAndOther) {
  const auto a = analyze(true);
  std::vector<std::string> names;
  for (const auto& c : a.phases.columns) names.push_back(c.name + (c.top_level ? "+" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"forward+", "backward+", "backward_inner", "backward_allreduce",
                                             "reduce_scatter", "step+"}));
  ASSERT_EQ(a.phases.ranks.size(), 3u);
  const auto& r0 = a.phases.ranks[0];
  ASSERT_EQ(r0.steps.size(), 4u);
  EXPECT_DOUBLE_EQ(*r0.steps[2].other_ms, 30.0);
  EXPECT_FALSE(r0.steps[2].ms[4].has_value());  // rank 0 has no reduce_scatter timer
  EXPECT_DOUBLE_EQ(*r0.mean_step_ms, 115.0);
  EXPECT_DOUBLE_EQ(*r0.mean_other_ms, 25.0);
  EXPECT_DOUBLE_EQ(*r0.mean_ms[2], 35.0);
  const auto& r1 = a.phases.ranks[1];
  EXPECT_DOUBLE_EQ(*r1.steps[1].other_ms, 0.0);
  EXPECT_DOUBLE_EQ(*r1.mean_other_ms, (5.0 + 0 + 40 + 30) / 4);
  EXPECT_DOUBLE_EQ(*r1.mean_ms[4], 4.0);
  // Rank 2 has step times and no timers: no "other" (nothing to subtract).
  EXPECT_FALSE(a.phases.ranks[2].mean_other_ms.has_value());
  EXPECT_DOUBLE_EQ(*a.phases.ranks[2].mean_step_ms, 100.0);
}

TEST_F(ProfileAnalysesTest, WarmupLeavesFirstStepsOutOfMeans) {
  AnalysisOptions options;
  options.warmup_steps = 1;
  const auto a = analyze(false, options);
  EXPECT_EQ(a.phases.ranks[0].counted_steps, 3);
  EXPECT_DOUBLE_EQ(*a.phases.ranks[0].mean_step_ms, 120.0);
  EXPECT_DOUBLE_EQ(*a.phases.ranks[0].mean_other_ms, 30.0);
  EXPECT_EQ(a.phases.ranks[0].steps.size(), 4u);  // rows are kept, only the means skip them
  EXPECT_EQ(a.stragglers.steps.size(), 3u);
  EXPECT_EQ(a.stragglers.steps.front().step, 1);
}

TEST_F(ProfileAnalysesTest, CommunicationHiddenVsExposed) {
  const auto a = analyze(true);
  ASSERT_EQ(a.comm_overlap.size(), 3u);
  const auto& r0 = a.comm_overlap[0];
  EXPECT_EQ(r0.method, OverlapMethod::kActivity);
  EXPECT_EQ(r0.comm_kernels, 2);
  EXPECT_NEAR(*r0.comm_ms, 2.0, 1e-12);
  EXPECT_NEAR(*r0.hidden_ms, 0.9, 1e-12);
  EXPECT_NEAR(*r0.exposed_ms, 1.1, 1e-12);
  EXPECT_NEAR(*r0.hidden_fraction, 0.45, 1e-12);
  // Rank 1 has no window: collectives 28 ms over steps 0-2, reduce_scatter timers 3 x 4 ms exposed.
  const auto& r1 = a.comm_overlap[1];
  EXPECT_EQ(r1.method, OverlapMethod::kTimers);
  EXPECT_DOUBLE_EQ(*r1.comm_ms, 28.0);
  EXPECT_DOUBLE_EQ(*r1.exposed_ms, 12.0);
  EXPECT_DOUBLE_EQ(*r1.hidden_ms, 16.0);
  EXPECT_DOUBLE_EQ(*r1.hidden_fraction, 16.0 / 28.0);
  EXPECT_EQ(r1.comm_kernels, 4);
  EXPECT_EQ(a.comm_overlap[2].method, OverlapMethod::kUnavailable);
  EXPECT_FALSE(a.comm_overlap[2].comm_ms.has_value());
}

TEST_F(ProfileAnalysesTest, TopKernelsAndIdleTime) {
  const auto a = analyze(true);
  ASSERT_TRUE(a.has_profiled_window);
  ASSERT_EQ(a.top_kernels.size(), 1u);
  const auto& t = a.top_kernels[0];
  EXPECT_EQ(t.rank, 0);
  EXPECT_NEAR(t.kernel_time_ms, 3.5, 1e-12);
  EXPECT_EQ(t.distinct_kernels, 4u);
  ASSERT_EQ(t.kernels.size(), 4u);
  EXPECT_EQ(t.kernels[0].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_TRUE(t.kernels[0].is_communication);
  EXPECT_NEAR(t.kernels[0].share, 1.5 / 3.5, 1e-12);
  EXPECT_EQ(t.kernels[1].name, "gemm");
  EXPECT_EQ(t.kernels[1].calls, 2);
  EXPECT_NEAR(t.kernels[1].total_ms, 1.3, 1e-12);
  EXPECT_NEAR(t.kernels[1].mean_us, 650.0, 1e-9);
  EXPECT_FALSE(t.kernels[1].is_communication);
  ASSERT_EQ(a.gpu_idle.size(), 1u);
  const auto& d = a.gpu_idle[0];
  EXPECT_NEAR(d.window_ms, 3.6, 1e-12);
  EXPECT_NEAR(d.busy_ms, 3.1, 1e-12);
  EXPECT_NEAR(d.idle_ms, 0.5, 1e-12);
  EXPECT_NEAR(d.idle_fraction, 0.5 / 3.6, 1e-12);
  EXPECT_EQ(d.activities, 6);
  AnalysisOptions two;
  two.top_kernels = 2;
  EXPECT_EQ(compute_top_kernels(0, profiled_window().records, 2).kernels.size(), 2u);
}

TEST_F(ProfileAnalysesTest, SlowestRankPerStep) {
  const auto s = analyze(false).stragglers;
  ASSERT_EQ(s.steps.size(), 4u);
  // step: slowest rank, slowest, median, lag
  const int slowest[] = {1, 0, 1, 0};  // step 3 is a tie (130, 130): the lower rank
  const double median[] = {100, 100, 120, 130}, lag[] = {5, 10, 20, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.steps[i].slowest_rank, slowest[i]) << "step " << i;
    EXPECT_DOUBLE_EQ(s.steps[i].median_ms, median[i]) << "step " << i;
    EXPECT_DOUBLE_EQ(s.steps[i].lag_ms, lag[i]) << "step " << i;
    EXPECT_DOUBLE_EQ(s.steps[i].fastest_ms, 100.0);
    EXPECT_EQ(s.steps[i].ranks, 3);
  }
  ASSERT_EQ(s.ranks.size(), 3u);
  EXPECT_EQ(s.ranks[0].slowest_count, 2);
  EXPECT_EQ(s.ranks[1].slowest_count, 2);
  EXPECT_EQ(s.ranks[2].slowest_count, 0);
  EXPECT_DOUBLE_EQ(s.ranks[0].mean_lag_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.ranks[1].mean_lag_ms, 6.25);
  EXPECT_DOUBLE_EQ(s.ranks[2].mean_lag_ms, -12.5);
  EXPECT_DOUBLE_EQ(s.ranks[1].mean_step_ms, 118.75);
}

TEST_F(ProfileAnalysesTest, TextAndJson) {
  const auto a = analyze(true);
  const std::string text = format_profile_analyses(a);
  for (const char* part : {"== Time per phase ==", "backward_inner*", "== Top kernels by total time ==",
                           "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "42.9 %", "13.9 %", "45.0 %"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  const auto j = to_json(a);
  EXPECT_TRUE(j["has_profiled_window"].get<bool>());
  EXPECT_EQ(j["phases"]["columns"][4]["name"], "reduce_scatter");
  EXPECT_TRUE(j["phases"]["ranks"][0]["steps"][0]["ms"][4].is_null());
  EXPECT_EQ(j["comm_overlap"][1]["method"], "timers");
  EXPECT_TRUE(j["comm_overlap"][2]["comm_ms"].is_null());
  EXPECT_EQ(j["top_kernels"][0]["kernels"][1]["calls"], 2);
  EXPECT_DOUBLE_EQ(j["stragglers"]["steps"][2]["lag_ms"].get<double>(), 20.0);
  const std::string no_window = format_profile_analyses(analyze(false));
  EXPECT_NE(no_window.find("this session has no profiled window"), std::string::npos) << no_window;
  EXPECT_EQ(no_window.find("== Top kernels"), std::string::npos);
}

TEST(ProfileAnalyses, RecognisesNcclKernels) {
  EXPECT_TRUE(is_communication_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(is_communication_kernel("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
  EXPECT_TRUE(is_communication_kernel("NCCL_copy"));
  EXPECT_FALSE(is_communication_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(is_communication_kernel("void my_nccl_helper()"));
  EXPECT_FALSE(is_communication_kernel("ncc"));
}

TEST(ProfileAnalyses, ColumnOrderAndMicroSteps) {
  TimerBreakdown t{0, 0, {{"zeta", 1}, {"fwd_microstep", 2}, {"step", 3}, {"stage3_gather", 4}, {"bwd", 5},
                          {"fwd", 6}}};
  StepMetrics m;
  m.step_time_ms = 20;
  const auto p = compute_phase_breakdown({m}, {t});
  std::vector<std::string> names;
  for (const auto& c : p.columns) names.push_back(c.name + (c.top_level ? "+" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"fwd+", "bwd+", "stage3_gather", "step+", "zeta", "fwd_microstep"}));
  EXPECT_DOUBLE_EQ(*p.ranks[0].steps[0].other_ms, 20.0 - 6 - 5 - 3);
}

TEST(ProfileAnalyses, OverlappingCommKernelsCountOnce) {
  // Two NCCL kernels on two streams at once count their union; compute overlapping both counts once.
  const std::vector<ActivityRecord> records = {kernel("ncclA", 0, 100, 1), kernel("ncclB", 50, 150, 2),
                                               kernel("gemm", 80, 120, 3), kernel("gemm", 90, 110, 4),
                                               kernel("ncclC", 0, 40, 1, 1), kernel("gemm", 10, 20, 5, 1)};
  const auto r = compute_comm_overlap_from_activities(0, records);
  EXPECT_NEAR(*r.comm_ms, (150 + 40) * 1e-3, 1e-12);
  EXPECT_NEAR(*r.hidden_ms, (40 + 10) * 1e-3, 1e-12);
  const auto idle = compute_gpu_idle(0, records);
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_EQ(idle[1].device, 1);
  EXPECT_NEAR(idle[1].idle_ms, 0.0, 1e-12);
}

}  // namespace
}  // namespace shardscope::profiler
