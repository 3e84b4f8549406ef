#pragma once
// What the CUDA kernel tests share: a device buffer with a host twin's upload and download.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "kernels/cuda_check.hpp"

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

}  // namespace shardscope::kernels::testing
