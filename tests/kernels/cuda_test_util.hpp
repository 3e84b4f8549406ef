#pragma once
// What the CUDA kernel tests share: a device buffer with a host twin's upload and download, a
// fixture that skips (with the reason) where no device is present and owns a stream, and the
// relative error the kernels are held to.

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/device_query.hpp"

namespace shardscope::kernels::testing {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(const std::vector<T>& host) : count_(host.size()) {
    if (count_ == 0) return;
    SHARDSCOPE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count_ * sizeof(T)), "test");
    upload(host);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), count_(other.count_) { other.data_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& host) {
    if (count_) SHARDSCOPE_CUDA_CHECK(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), "test");
  }
  void download(std::vector<T>& host) const {
    if (count_) SHARDSCOPE_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), "test");
  }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// Skips without a CUDA device; stream_ is a fresh stream for the test.
class CudaStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaDeviceQuery query = query_cuda_devices();
    if (query.devices.empty()) GTEST_SKIP() << "no CUDA device: " << query.error;
    SHARDSCOPE_CUDA_CHECK(cudaStreamCreate(&stream_), "test");
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

/// ||a - b|| / ||b|| in double; infinity when `a` holds a NaN (an element the kernel did not write).
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) return std::numeric_limits<double>::infinity();
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace shardscope::kernels::testing
