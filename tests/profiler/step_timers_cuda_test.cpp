// Step timers on CUDA events: they time GPU work without blocking the host. Skipped, with the
// reason, where no CUDA device is present.
#include <cuda_runtime_api.h>

#include <chrono>

#include <gtest/gtest.h>

#include "profiler/step_timers.hpp"

namespace shardscope::profiler {
namespace {

bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(StepTimersCuda, TimesGpuWorkWithoutBlockingTheHost) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* buffer = nullptr;
  const std::size_t bytes = std::size_t(1) << 30;
  ASSERT_EQ(cudaMalloc(&buffer, bytes), cudaSuccess);
  StepTimers timers;
  timers("memset").start_on_stream(stream);
  for (int i = 0; i < 20; ++i) cudaMemsetAsync(buffer, i, bytes, stream);
  const auto host_start = std::chrono::steady_clock::now();
  timers("memset").stop();
  const double stop_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start).count();
  // 20 GiB of memset take milliseconds on any GPU; stop() only records an event.
  const double gpu_ms = timers("memset").elapsed_ms();
  EXPECT_GT(gpu_ms, 1.0);
  EXPECT_LT(stop_us, 1000.0 * gpu_ms / 2);
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);  // reading synchronized on the end event
  // Events are reused: a second interval gives a fresh, positive value.
  timers("memset").start_on_stream(stream);
  cudaMemsetAsync(buffer, 1, bytes, stream);
  timers("memset").stop();
  EXPECT_GT(timers("memset").mean_ms(), 0.0);
  cudaFree(buffer);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace shardscope::profiler
