// PyTorch profiler (Kineto) Chrome traces: GPU kernels, copies and annotations on the Unix-epoch
// timeline, steps from ProfilerStep#N, the rank from distributedInfo.
#include <gtest/gtest.h>

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
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.ranges[0].device, -1);
  EXPECT_EQ(t.ranges[0].domain, "user_annotation");
  EXPECT_EQ(t.ranges[1].device, 0);
  EXPECT_EQ(t.skipped_events, 4u);  // cpu_op, cuda_runtime, the flow and the metadata
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
