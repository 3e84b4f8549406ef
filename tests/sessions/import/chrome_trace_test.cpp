// PyTorch profiler (Kineto) Chrome traces: GPU kernels, copies, annotations and CPU operators on
// the Unix-epoch timeline, steps and step times from ProfilerStep#N, forward/backward links from
// the fwdbwd flows, the rank from distributedInfo.
#include <gtest/gtest.h>

#include <stdexcept>

#include "sessions/import/chrome_trace.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace {

// The shape Kineto writes (torch 2.x): keys in its order, baseTimeNanoseconds after the events.
constexpr const char* kTrace = R"trace({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 10, "tid": 10, "ts": 1000.0, "dur": 500.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1001.0, "dur": 5.0, "args": {"Input Dims": [[4, 4], [4, 4]]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1002.0, "dur": 3.0},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#0", "pid": 0, "tid": 7, "ts": 1010.0, "dur": 600.0, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32_sliced1x4_nn", "pid": 0, "tid": 7, "ts": 1020.5, "dur": 12.25,
     "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 42, "registers per thread": 96,
              "grid": [8, 2, 1], "block": [128, 1, 1], "est. achieved occupancy %": 25}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20,
     "ts": 1040.0, "dur": 100.0, "args": {"device": 0, "stream": 20, "correlation": 43}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1015.0, "dur": 2.0,
     "args": {"device": 0, "stream": 7, "correlation": 41, "bytes": 4096, "memory bandwidth (GB/s)": 2.048}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1700.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "bytes": 64}},
    {"ph": "s", "cat": "ac2g", "id": 42, "pid": 10, "tid": 10, "ts": 1002.0},
    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}
  ],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790000000000000000
})trace";

TEST(ChromeTrace, KernelsCopiesAndAnnotationsLandOnTheEpochTimeline) {
  const ChromeTrace t = parse_chrome_trace(kTrace, "rank1.json");
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.backend, "nccl");
  ASSERT_EQ(t.activities.size(), 4u);
  const auto& copy = t.activities[0];  // by start time
  EXPECT_EQ(copy.kind, ActivityKind::kMemcpy);
  EXPECT_EQ(copy.name, "HtoD");
  EXPECT_EQ(copy.bytes, 4096);
  EXPECT_DOUBLE_EQ(*copy.throughput_gbps, 2.048);
  const auto& gemm = t.activities[1];
  EXPECT_EQ(gemm.kind, ActivityKind::kKernel);
  EXPECT_EQ(gemm.start_ns, 1790000000000000000 + 1020500);
  EXPECT_EQ(gemm.end_ns - gemm.start_ns, 12250);
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(*gemm.grid, (Dim3{8, 2, 1}));
  EXPECT_EQ(*gemm.block, (Dim3{128, 1, 1}));
  EXPECT_EQ(*gemm.registers_per_thread, 96);
  EXPECT_EQ(*gemm.correlation_id, 42);
  EXPECT_EQ(gemm.step, 1);  // inside the GPU's ProfilerStep#0: DeepSpeed's step 1
  EXPECT_EQ(t.activities[2].stream, 20);
  EXPECT_EQ(t.activities[3].kind, ActivityKind::kMemset);
  EXPECT_EQ(t.activities[3].step, -1);  // after every step window
  ASSERT_EQ(t.ranges.size(), 3u);  // by start: ProfilerStep#0, aten::mm, the GPU's ProfilerStep#0
  EXPECT_EQ(t.ranges[0].device, -1);
  EXPECT_EQ(t.ranges[0].domain, "user_annotation");
  EXPECT_EQ(t.ranges[1].domain, kCpuOpDomain);
  EXPECT_EQ(t.ranges[1].shapes, "[[4,4],[4,4]]");
  EXPECT_EQ(t.ranges[1].step, 1);
  EXPECT_EQ(t.ranges[2].device, 0);
  EXPECT_EQ(t.cpu_ops, 1u);
  EXPECT_EQ(t.skipped_events, 3u);  // cuda_runtime, the ac2g flow and the metadata
}

// A CPU run's trace as torch 2.11 writes it with record_shapes=True (names, args and the fwdbwd
// flows as in a real one): operators nested on one thread, a backward op linked to its forward op.
constexpr const char* kCpuTrace = R"trace({
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 9, "tid": 9, "ts": 100.0, "dur": 50.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 9, "tid": 9, "ts": 101.0, "dur": 10.0,
     "args": {"External id": 5, "Sequence number": 12, "Fwd thread id": 0, "Input Dims": [[8, 16], [32, 16], [32]],
              "Input type": ["float", "float", "float"], "Concrete Inputs": ["", "", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 9, "tid": 9, "ts": 101.0, "dur": 2.0,
     "args": {"External id": 6, "Sequence number": 12, "Fwd thread id": 0, "Input Dims": [[32, 16]]}},
    {"ph": "s", "id": 6, "pid": 9, "tid": 9, "ts": 101.0, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 9, "tid": 9, "ts": 104.0, "dur": 6.0,
     "args": {"External id": 7, "Input Dims": [[32], [8, 16], [16, 32], [], []]}},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: TBackward0", "pid": 9, "tid": 9,
     "ts": 120.0, "dur": 5.0, "args": {"External id": 20, "Sequence number": 12, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 9, "tid": 9, "ts": 120.5, "dur": 4.0,
     "args": {"External id": 21, "Sequence number": 12, "Fwd thread id": 1, "Input Dims": [[16, 32]]}},
    {"ph": "f", "id": 6, "pid": 9, "tid": 9, "ts": 120.5, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"ph": "s", "id": 8, "pid": 9, "tid": 9, "ts": 104.0, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "f", "id": 8, "pid": 9, "tid": 9, "ts": 126.0, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 9, "tid": 9, "ts": 125.5, "dur": 3.0,
     "args": {"External id": 22, "Sequence number": 13}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 9, "tid": 9, "ts": 150.0, "dur": 30.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 9, "tid": 9, "ts": 151.0, "dur": 1.0,
     "args": {"Input Dims": [[[2, 3], [2, 3]], []]}},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 9, "tid": 9, "ts": 150.0, "dur": 9.0}
  ],
  "baseTimeNanoseconds": 1790000000000000000
})trace";

const NvtxRange& range_named(const ChromeTrace& t, const std::string& name) {
  for (const auto& r : t.ranges)
    if (r.name == name) return r;
  throw std::runtime_error("no range " + name);
}

TEST(ChromeTrace, CpuOperatorsKeepShapesIdsAndTheirStep) {
  const ChromeTrace t = parse_chrome_trace(kCpuTrace, "rank0.json");
  EXPECT_EQ(t.cpu_ops, 7u);
  EXPECT_EQ(t.ranges.size(), 9u);
  EXPECT_EQ(t.skipped_events, 1u);  // the python_function
  EXPECT_TRUE(t.activities.empty());
  // By start, an enclosing operator before the one it encloses (aten::linear and aten::t start together).
  EXPECT_EQ(t.ranges[0].name, "ProfilerStep#4");
  EXPECT_EQ(t.ranges[1].name, "aten::linear");
  EXPECT_EQ(t.ranges[2].name, "aten::t");
  const NvtxRange& linear = t.ranges[1];
  EXPECT_EQ(linear.domain, "cpu_op");
  EXPECT_EQ(linear.device, -1);
  EXPECT_EQ(linear.stream, 9);
  EXPECT_EQ(linear.start_ns, 1790000000000000000 + 101000);
  EXPECT_EQ(linear.end_ns - linear.start_ns, 10000);
  EXPECT_EQ(linear.shapes, "[[8,16],[32,16],[32]]");
  EXPECT_EQ(linear.external_id, 5);
  EXPECT_EQ(linear.sequence_number, 12);
  EXPECT_EQ(linear.forward_thread_id, 0);
  EXPECT_EQ(linear.step, 5);  // inside ProfilerStep#4
  EXPECT_EQ(range_named(t, "aten::addmm").shapes, "[[32],[8,16],[16,32],[],[]]");
  EXPECT_EQ(range_named(t, "aten::cat").shapes, "[[[2,3],[2,3]],[]]");  // a tensor list
  EXPECT_EQ(range_named(t, "aten::cat").step, 6);
  EXPECT_EQ(range_named(t, "aten::cat").sequence_number, std::nullopt);
  EXPECT_EQ(range_named(t, "autograd::engine::evaluate_function: TBackward0").shapes, "");
  EXPECT_FALSE(range_named(t, "ProfilerStep#4").has_op_details());
}

TEST(ChromeTrace, FwdbwdFlowsLinkEachBackwardOpToItsForwardOp) {
  const ChromeTrace t = parse_chrome_trace(kCpuTrace, "rank0.json");
  EXPECT_EQ(t.forward_backward_links, 2u);
  // "s" at 101.0 binds to the innermost op starting there (aten::t, not aten::linear); "f" binds
  // to TBackward0 (starting at its ts), not to the evaluate_function around it.
  EXPECT_EQ(range_named(t, "TBackward0").forward_op_id, 6);
  EXPECT_EQ(range_named(t, "autograd::engine::evaluate_function: TBackward0").forward_op_id, std::nullopt);
  // An "f" inside an op (126.0 in AddmmBackward0's 125.5..128.5) binds to the op enclosing it.
  EXPECT_EQ(range_named(t, "AddmmBackward0").forward_op_id, 7);
  EXPECT_EQ(range_named(t, "aten::t").forward_op_id, std::nullopt);
}

TEST(ChromeTrace, ProfilerStepWindowsAreTheCpuStepTimes) {
  ChromeTraceOptions options;
  options.step_offset = 1;
  const ChromeTrace t = parse_chrome_trace(kCpuTrace, "rank0.json", options);
  ASSERT_EQ(t.step_windows.size(), 2u);
  EXPECT_EQ(t.step_windows[0].step, 5);
  EXPECT_EQ(t.step_windows[0].start_ns, 1790000000000000000 + 100000);
  EXPECT_EQ(t.step_windows[0].end_ns - t.step_windows[0].start_ns, 50000);
  EXPECT_EQ(t.step_windows[1].step, 6);
  EXPECT_EQ(t.step_windows[1].end_ns - t.step_windows[1].start_ns, 30000);
}

TEST(ChromeTrace, LongShapeListsAreCutAndMarked) {
  std::string dims = "[";
  for (int i = 0; i < 2000; ++i) dims += std::string(i ? "," : "") + "[1024,1024]";
  dims += "]";
  const std::string trace = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::cat", "tid": 1, "ts": 1.0,
      "dur": 1.0, "args": {"Input Dims": )" + dims + R"(, "External id": 3}}]})";
  const ChromeTrace t = parse_chrome_trace(trace, "t.json");
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.ranges[0].shapes.size(), kMaxShapesChars);
  EXPECT_EQ(t.ranges[0].shapes.substr(0, 22), "[[1024,1024],[1024,102");
  EXPECT_EQ(t.ranges[0].shapes.substr(kMaxShapesChars - 3), "...");
  EXPECT_EQ(t.ranges[0].external_id, 3);  // what follows the cut list is still read
}

TEST(ChromeTrace, TheStepOffsetFollowsTheOption) {
  ChromeTraceOptions options;
  options.step_offset = 10;
  EXPECT_EQ(parse_chrome_trace(kTrace, "t.json", options).activities[1].step, 10);
}

TEST(ChromeTrace, BadInputNamesTheFileAndWhatIsWrong) {
  try {
    parse_chrome_trace(R"({"traceEvents": [{"ph": "X",]})", "bad.json");
    FAIL();
  } catch (const ImportError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.json: byte ", 0), 0u) << e.what();
  }
  try {
    parse_chrome_trace(R"({"events": []})", "other.json");
    FAIL();
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("no \"traceEvents\" array"), std::string::npos);
  }
}

// The chrome_trace fuzzer's find: a base time or timestamp whose nanoseconds leave int64 wrapped
// around (undefined behaviour). Such an event is skipped and counted; the sane one is kept.
TEST(ChromeTrace, TimesOutsideInt64AreSkippedNotWrapped) {
  const std::string events = R"("traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 9.3e15, "dur": 1.0},
      {"ph": "X", "cat": "kernel", "name": "long", "pid": 0, "tid": 7, "ts": 1.0, "dur": 1e300},
      {"ph": "X", "cat": "kernel", "name": "fine", "pid": 0, "tid": 7, "ts": 2.0, "dur": 1.0}])";
  const ChromeTrace near_zero = parse_chrome_trace("{" + events + "}", "t.json");
  ASSERT_EQ(near_zero.activities.size(), 1u);
  EXPECT_EQ(near_zero.activities[0].name, "fine");
  EXPECT_EQ(near_zero.activities[0].start_ns, 2000);
  EXPECT_EQ(near_zero.skipped_events, 2u);
  const ChromeTrace huge_base =
      parse_chrome_trace("{" + events + R"(, "baseTimeNanoseconds": 1790200000000000000000})", "t.json");
  EXPECT_TRUE(huge_base.activities.empty());
  EXPECT_EQ(huge_base.skipped_events, 3u);
}

TEST(ChromeTrace, RanksComeFromFileNames) {
  EXPECT_EQ(rank_from_trace_file_name("/x/rank3.json"), 3);
  EXPECT_EQ(rank_from_trace_file_name("host_1234.rank_12.pt.trace.json"), 12);
  EXPECT_EQ(rank_from_trace_file_name("trace.json"), std::nullopt);
}

}  // namespace
}  // namespace shardscope::sessions
