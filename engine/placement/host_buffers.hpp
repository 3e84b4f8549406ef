#pragma once
// Host memory for swapping: tensors whose storage O_DIRECT can read into and write from (4 KiB
// aligned address and length), pinned on a GPU machine so device copies from them run
// asynchronously, and a pool of such buffers handed out and returned as DeepSpeed's
// SwapBufferManager does. On a GPU a returned buffer may still be the source of a device copy
// in flight; the pool then waits for that copy (an event on the stream) before reusing it.

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

namespace shardscope::engine {

/// `numel` elements of `dtype` (the length rounded up to 4 KiB) at a 4 KiB aligned address, zeroed;
/// page-locked through CUDA's host allocator when `pinned`.
torch::Tensor aligned_host_tensor(std::int64_t numel, torch::Dtype dtype, bool pinned);

/// Elements of `dtype` in `numel` rounded up so the byte length is a multiple of 4 KiB.
std::int64_t io_aligned_numel(std::int64_t numel, torch::Dtype dtype);

class HostBufferPool {
 public:
  /// `count` buffers of `numel` elements (each 4 KiB aligned) of `dtype`.
  HostBufferPool(int count, std::int64_t numel, torch::Dtype dtype, bool pinned);
  HostBufferPool(HostBufferPool&&) noexcept;
  HostBufferPool& operator=(HostBufferPool&&) noexcept;
  ~HostBufferPool();

  int count() const { return static_cast<int>(buffers_.size()); }
  int free_count() const;
  std::int64_t numel() const { return numel_; }
  /// Bytes the pool holds.
  std::int64_t bytes() const;
  /// Adds every buffer to `out` (memory accounting).
  void collect(std::vector<torch::Tensor>& out) const { out.insert(out.end(), buffers_.begin(), buffers_.end()); }
  /// A free buffer's index, waiting for a fenced one when only those are left; nullopt when every
  /// buffer is taken.
  std::optional<int> acquire();
  /// The whole buffer `index`.
  const torch::Tensor& buffer(int index) const { return buffers_[static_cast<std::size_t>(index)]; }
  /// Returns buffer `index`; with `device` a GPU, only once the work queued on its current stream
  /// so far (a copy out of the buffer) has run.
  void release(int index, const torch::Device& device);

 private:
  struct Fence;
  std::vector<torch::Tensor> buffers_;
  std::vector<int> free_;
  std::vector<std::pair<int, std::shared_ptr<Fence>>> fenced_;
  std::int64_t numel_ = 0;
};

}  // namespace shardscope::engine
