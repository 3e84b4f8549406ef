// The CUPTI collector on a real device: a kernel of known shape, a copy and a memset, recorded
// with their details, on the host clock, with the step they ran in. Skipped without a device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/cupti_activity.hpp"
#include "profiler/profiler_error.hpp"
#include "profiler/nvtx_ranges.hpp"

void shardscope_launch_test_spin(void* stream, float* x, int n, int grid, int block);

namespace shardscope::profiler {
namespace {

using sessions::ActivityKind;
using sessions::ActivityRecord;

bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(CuptiActivityCuda, RecordsKernelsCopiesAndMemsetsOnTheHostClock) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const int n = 3 * 64;
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 1 << 20), cudaSuccess);
  std::vector<char> host(1 << 20, 1);
  std::vector<ActivityRecord> records;
  std::vector<sessions::NvtxRange> ranges;
  CuptiActivityOptions options;
  options.rank = 3;
  options.batch_records = 2;  // several batches
  int batches = 0;
  CuptiActivityCollector collector(
      options,
      [&](sessions::ActivityBatch&& b) {
        EXPECT_EQ(b.rank, 3);
        ++batches;
        records.insert(records.end(), b.records.begin(), b.records.end());
      },
      [&](sessions::NvtxBatch&& b) { ranges.insert(ranges.end(), b.ranges.begin(), b.ranges.end()); });
  const std::int64_t before = host_unix_ns();
  collector.start();
  collector.begin_step(5);
  {
    ScopedRange range(NvtxPhase::kForward);
    shardscope_launch_test_spin(stream, device, n, 3, 64);
    cudaMemcpyAsync(device, host.data(), host.size(), cudaMemcpyHostToDevice, stream);
    cudaMemsetAsync(device, 0, 4096, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  collector.stop();
  const std::int64_t after = host_unix_ns();

  auto kernel = std::find_if(records.begin(), records.end(), [](const auto& r) {
    return r.kind == ActivityKind::kKernel && r.name.find("shardscope_test_spin") != std::string::npos;
  });
  ASSERT_NE(kernel, records.end()) << records.size() << " records";
  EXPECT_NE(kernel->name.find("(float*, int, int)"), std::string::npos) << kernel->name;  // demangled
  EXPECT_EQ(kernel->grid, (sessions::Dim3{3, 1, 1}));
  EXPECT_EQ(kernel->block, (sessions::Dim3{64, 1, 1}));
  EXPECT_GT(kernel->registers_per_thread.value_or(0), 0);
  EXPECT_TRUE(kernel->correlation_id.has_value());
  EXPECT_EQ(kernel->step, 5);
  EXPECT_GE(kernel->start_ns, before);
  EXPECT_LE(kernel->end_ns, after);
  EXPECT_LT(kernel->start_ns, kernel->end_ns);
  auto copy = std::find_if(records.begin(), records.end(), [](const auto& r) { return r.kind == ActivityKind::kMemcpy; });
  ASSERT_NE(copy, records.end());
  EXPECT_EQ(copy->name, "HtoD");
  EXPECT_EQ(copy->bytes, 1 << 20);
  EXPECT_GT(copy->throughput_gbps.value_or(0), 0.0);
  EXPECT_GE(copy->start_ns, kernel->end_ns);  // same stream: in order, on one clock
  auto set = std::find_if(records.begin(), records.end(), [](const auto& r) { return r.kind == ActivityKind::kMemset; });
  ASSERT_NE(set, records.end());
  EXPECT_EQ(set->bytes, 4096);
  EXPECT_GT(batches, 1);
  const auto stats = collector.stats();
  EXPECT_GE(stats.kernels, 1);
  EXPECT_EQ(stats.dropped, 0);
  // NVTX ranges reach CUPTI only when it is NVTX's injection (NVTX_INJECTION64_PATH=libcupti.so).
  if (std::getenv("NVTX_INJECTION64_PATH")) {
    auto forward = std::find_if(ranges.begin(), ranges.end(), [](const auto& r) { return r.name == "forward"; });
    ASSERT_NE(forward, ranges.end());
    EXPECT_EQ(forward->domain, "ShardScope");
    EXPECT_LE(forward->start_ns, kernel->start_ns);
  }
  cudaFree(device);
  cudaStreamDestroy(stream);
}

TEST(CuptiActivityCuda, OneCollectorAtATime) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  CuptiActivityCollector first({}, nullptr, nullptr), second({}, nullptr, nullptr);
  first.start();
  EXPECT_THROW(second.start(), ProfilerError);
  first.stop();
  second.start();
  second.stop();
}

}  // namespace
}  // namespace shardscope::profiler
