#include "engine/placement/host_buffers.hpp"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <stdexcept>

#include "aio/aligned_buffer.hpp"

namespace shardscope::engine {

struct HostBufferPool::Fence {
  explicit Fence(const torch::Device& device) : event(device.type()) {
    event.record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
  }
  c10::Event event;
};

std::int64_t io_aligned_numel(std::int64_t numel, torch::Dtype dtype) {
  const auto element = static_cast<std::int64_t>(c10::elementSize(dtype));
  return aio::io_aligned(numel * element) / element;
}

torch::Tensor aligned_host_tensor(std::int64_t numel, torch::Dtype dtype, bool pinned) {
  const std::int64_t bytes = aio::io_aligned(numel * static_cast<std::int64_t>(c10::elementSize(dtype)));
  const auto alignment = static_cast<std::int64_t>(aio::kIoAlignment);
  if (pinned) {
    // CUDA's host allocator gives page-locked memory with no alignment promise: take one page
    // more and start at the first 4 KiB boundary.
    auto raw = torch::zeros({bytes + alignment}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    const auto address = reinterpret_cast<std::uintptr_t>(raw.data_ptr());
    const auto skip = static_cast<std::int64_t>((alignment - static_cast<std::int64_t>(address % alignment)) % alignment);
    return raw.narrow(0, skip, bytes).view(dtype);
  }
  auto* memory = new aio::AlignedBuffer(static_cast<std::size_t>(bytes));
  return torch::from_blob(memory->data(), {bytes / static_cast<std::int64_t>(c10::elementSize(dtype))},
                          [memory](void*) { delete memory; }, torch::TensorOptions().dtype(dtype));
}

HostBufferPool::HostBufferPool(int count, std::int64_t numel, torch::Dtype dtype, bool pinned)
    : numel_(io_aligned_numel(numel, dtype)) {
  for (int i = 0; i < count; ++i) {
    buffers_.push_back(aligned_host_tensor(numel_, dtype, pinned));
    free_.push_back(count - 1 - i);
  }
}

HostBufferPool::HostBufferPool(HostBufferPool&&) noexcept = default;
HostBufferPool& HostBufferPool::operator=(HostBufferPool&&) noexcept = default;
HostBufferPool::~HostBufferPool() {
  for (auto& [index, fence] : fenced_) fence->event.synchronize();  // no copy may outlive its source
}

int HostBufferPool::free_count() const { return static_cast<int>(free_.size() + fenced_.size()); }

std::int64_t HostBufferPool::bytes() const {
  std::int64_t total = 0;
  for (const auto& b : buffers_) total += b.numel() * static_cast<std::int64_t>(b.element_size());
  return total;
}

std::optional<int> HostBufferPool::acquire() {
  // Fenced buffers whose copy already ran are free; then any free one; then wait for the oldest fence.
  for (auto it = fenced_.begin(); it != fenced_.end();) {
    if (it->second->event.query()) {
      free_.push_back(it->first);
      it = fenced_.erase(it);
    } else {
      ++it;
    }
  }
  if (!free_.empty()) {
    const int index = free_.back();
    free_.pop_back();
    return index;
  }
  if (fenced_.empty()) return std::nullopt;
  const int index = fenced_.front().first;
  fenced_.front().second->event.synchronize();
  fenced_.erase(fenced_.begin());
  return index;
}

void HostBufferPool::release(int index, const torch::Device& device) {
  if (device.is_cuda())
    fenced_.emplace_back(index, std::make_shared<Fence>(device));
  else
    free_.push_back(index);
}

}  // namespace shardscope::engine
