#pragma once
// Host memory O_DIRECT can read into and write from: the address and the length are multiples of
// kIoAlignment (4 KiB, the logical block size of every NVMe and of 4Kn disks; 512-byte devices
// accept it too), zero-filled at allocation. DeepSpeed's aio op asks the same of its pinned
// tensors (posix_memalign'd, the length padded to the alignment).

#include <cstddef>
#include <cstdint>

namespace shardscope::aio {

/// Address and length alignment of every O_DIRECT transfer.
inline constexpr std::size_t kIoAlignment = 4096;

/// `bytes` rounded up to a multiple of kIoAlignment.
constexpr std::int64_t io_aligned(std::int64_t bytes) {
  return (bytes + static_cast<std::int64_t>(kIoAlignment) - 1) / static_cast<std::int64_t>(kIoAlignment) *
         static_cast<std::int64_t>(kIoAlignment);
}

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /// At least `bytes` bytes (rounded up to kIoAlignment), zero-filled; throws std::bad_alloc.
  explicit AlignedBuffer(std::size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() const { return data_; }
  /// The usable length: the requested bytes rounded up to kIoAlignment.
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Whether `pointer` and `bytes` both satisfy kIoAlignment.
bool is_io_aligned(const void* pointer, std::size_t bytes);

}  // namespace shardscope::aio
