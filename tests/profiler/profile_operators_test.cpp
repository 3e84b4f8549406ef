// The CPU operator analyses (top operators by self and total time, host time outside operators)
// on a small window whose every number is worked out by hand below.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/profile_analyses.hpp"
#include "profiler/profile_selection.hpp"

namespace shardscope::profiler {
namespace {

using namespace sessions;

constexpr std::int64_t kUs = 1000;  // times below are written in microseconds

NvtxRange op(const std::string& name, std::int64_t start_us, std::int64_t end_us, const std::string& shapes = "",
             std::int64_t thread = 9) {
  NvtxRange r{name, kCpuOpDomain, start_us * kUs, end_us * kUs, -1, thread, 1};
  r.shapes = shapes;
  return r;
}

// Thread 9, one ProfilerStep window 0..100 us:
//   aten::linear [0, 40) calls aten::t [0, 5) and aten::addmm [10, 30); aten::linear again [50, 70)
//   calling aten::addmm [52, 62); TBackward0 [80, 84) links to the first aten::t (external id 6).
// Self: linear 40-5-20 = 15 and 20-10 = 10; t 5; addmm 20 and 10; TBackward0 4.  Sum 64 us.
// Busy (union of operators) 40 + 20 + 4 = 64 us of the 100 us window: 36 us outside.
// Thread 11 (a hook's thread, no step window): aten::copy_ [200, 210), [230, 240): span 40, busy 20.
std::vector<NvtxRange> window() {
  std::vector<NvtxRange> r{{"ProfilerStep#0", "user_annotation", 0, 100 * kUs, -1, 9, 1}};
  r.push_back(op("aten::linear", 0, 40, "[[8,16],[32,16],[32]]"));
  r.push_back(op("aten::t", 0, 5, "[[32,16]]"));
  r.back().external_id = 6;
  r.push_back(op("aten::addmm", 10, 30, "[[32],[8,16],[16,32],[],[]]"));
  r.push_back(op("aten::linear", 50, 70, "[[8,16],[32,16],[32]]"));
  r.push_back(op("aten::addmm", 52, 62, "[[32],[8,16],[16,32],[],[]]"));
  r.push_back(op("TBackward0", 80, 84, "[[16,32]]"));
  r.back().forward_op_id = 6;
  r.push_back(op("aten::copy_", 200, 210, "[[4],[4]]", 11));
  r.push_back(op("aten::copy_", 230, 240, "[[4],[4]]", 11));
  return r;
}

TEST(ProfileOperators, SelfTimeLeavesOutTheOperatorsCalled) {
  const auto top = compute_top_operators(0, window(), 0, OperatorOrder::kSelf);
  EXPECT_EQ(top.operator_calls, 8);
  EXPECT_EQ(top.distinct, 5u);
  EXPECT_EQ(top.forward_backward_links, 1);
  EXPECT_DOUBLE_EQ(top.self_time_ms, (64 + 20) / 1000.0);
  ASSERT_EQ(top.operators.size(), 5u);
  const OperatorStat& addmm = top.operators[0];  // self 30 us
  EXPECT_EQ(addmm.name, "aten::addmm");
  EXPECT_EQ(addmm.shapes, "[[32],[8,16],[16,32],[],[]]");
  EXPECT_EQ(addmm.calls, 2);
  EXPECT_DOUBLE_EQ(addmm.self_ms, 0.030);
  EXPECT_DOUBLE_EQ(addmm.total_ms, 0.030);
  EXPECT_DOUBLE_EQ(addmm.mean_us, 15);
  EXPECT_DOUBLE_EQ(addmm.self_share, 30.0 / 84.0);
  const OperatorStat& linear = top.operators[1];  // self 25 us, total 60 us
  EXPECT_EQ(linear.name, "aten::linear");
  EXPECT_DOUBLE_EQ(linear.self_ms, 0.025);
  EXPECT_DOUBLE_EQ(linear.total_ms, 0.060);
  EXPECT_EQ(top.operators[2].name, "aten::copy_");
  EXPECT_EQ(top.operators[4].name, "TBackward0");
  EXPECT_EQ(top.operators[4].forward_op, "aten::t");  // through the fwdbwd link
}

TEST(ProfileOperators, TotalTimeOrderAndTheTopN) {
  const auto top = compute_top_operators(0, window(), 2, OperatorOrder::kTotal);
  ASSERT_EQ(top.operators.size(), 2u);
  EXPECT_EQ(top.distinct, 5u);
  EXPECT_EQ(top.operators[0].name, "aten::linear");  // 60 us inclusive
  EXPECT_EQ(top.operators[1].name, "aten::addmm");
}

TEST(ProfileOperators, HostTimeOutsideOperatorsPerThread) {
  const auto idle = compute_host_idle(0, window());
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_EQ(idle[0].thread, 9);
  EXPECT_TRUE(idle[0].step_windows);
  EXPECT_DOUBLE_EQ(idle[0].window_ms, 0.100);
  EXPECT_DOUBLE_EQ(idle[0].busy_ms, 0.064);
  EXPECT_DOUBLE_EQ(idle[0].idle_ms, 0.036);
  EXPECT_NEAR(idle[0].idle_fraction, 0.36, 1e-12);
  EXPECT_EQ(idle[0].operators, 6);
  EXPECT_EQ(idle[1].thread, 11);
  EXPECT_FALSE(idle[1].step_windows);  // no ProfilerStep on the thread: first to last operator
  EXPECT_DOUBLE_EQ(idle[1].window_ms, 0.040);
  EXPECT_DOUBLE_EQ(idle[1].idle_ms, 0.020);
}

TEST(ProfileOperators, TheAnalysesOfACpuRunShowOperatorsNotAMissingWindow) {
  ProfileRecords records;
  records.ranks = {0};
  records.nvtx[0] = window();
  AnalysisOptions options;
  options.operator_order = OperatorOrder::kTotal;
  const auto a = analyze_records(records, options);
  EXPECT_FALSE(a.has_profiled_window);
  EXPECT_TRUE(a.has_cpu_operators);
  ASSERT_EQ(a.top_operators.size(), 1u);
  EXPECT_EQ(a.host_idle.size(), 2u);
  const std::string text = format_profile_analyses(a, options);
  EXPECT_NE(text.find("no GPU records in the profiled window (a CPU run"), std::string::npos) << text;
  EXPECT_EQ(text.find("record one with a `flops_profiler` block"), std::string::npos) << text;
  EXPECT_NE(text.find("== Top CPU operators by total time =="), std::string::npos) << text;
  EXPECT_NE(text.find("[[32],[8,16],[16,32],[],[]]"), std::string::npos) << text;
  EXPECT_NE(text.find("== Host time outside CPU operators =="), std::string::npos) << text;
  const auto json = to_json(a);
  EXPECT_EQ(json["operator_order"], "total");
  EXPECT_EQ(json["top_operators"][0]["operators"][0]["name"], "aten::linear");
  EXPECT_EQ(json["top_operators"][0]["operators"][0]["calls"], 2);
  EXPECT_EQ(json["host_idle"][1]["thread"], 11);
}

}  // namespace
}  // namespace shardscope::profiler
