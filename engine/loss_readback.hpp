#pragma once
// The loss of each micro-step reaches the host without stopping the device in the middle of a
// step. `loss.item()` right after the forward (what a training loop that logs its loss does)
// makes the host wait for the whole forward before it queues the backward, and the GPU idles
// while the backward gets going (0.7-0.9 ms per step measured on an H200, docs/benchmarks.md).
// Here each loss is copied into pinned host memory without blocking, and the sum is read once the
// step's work is queued, behind an event that by then has long completed.

#include <memory>

#include <torch/torch.h>

namespace shardscope::engine {

class LossReadback {
 public:
  LossReadback();
  ~LossReadback();
  LossReadback(const LossReadback&) = delete;
  LossReadback& operator=(const LossReadback&) = delete;

  /// Queues this micro-step's scalar `loss` for the host (on the CPU: reads it at once).
  void push(const torch::Tensor& loss);
  /// Waits for the queued copies and returns the sum of the losses pushed since the last call.
  double take_sum();

 private:
  struct Pending;
  std::unique_ptr<Pending> pending_;
  double host_sum_ = 0;  ///< CPU losses, read at push
};

}  // namespace shardscope::engine
