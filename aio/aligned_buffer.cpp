#include "aio/aligned_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace shardscope::aio {

AlignedBuffer::AlignedBuffer(std::size_t bytes) {
  if (bytes == 0) return;
  size_ = static_cast<std::size_t>(io_aligned(static_cast<std::int64_t>(bytes)));
  if (::posix_memalign(&data_, kIoAlignment, size_) != 0) {
    data_ = nullptr;
    size_ = 0;
    throw std::bad_alloc();
  }
  std::memset(data_, 0, size_);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

bool is_io_aligned(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kIoAlignment == 0 && bytes % kIoAlignment == 0;
}

}  // namespace shardscope::aio
