// A kernel with a known launch shape for the CUPTI test (tests/profiler/cupti_activity_cuda_test.cpp).
#include <cuda_runtime_api.h>

namespace {

__global__ void shardscope_test_spin(float* x, int n, int rounds) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
  x[i] = v;
}

}  // namespace

/// Launches shardscope_test_spin<<<grid, block, 0, stream>>> over n floats.
void shardscope_launch_test_spin(void* stream, float* x, int n, int grid, int block) {
  shardscope_test_spin<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(x, n, 1000);
}
