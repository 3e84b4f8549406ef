#include "engine/loss_readback.hpp"

#include <vector>

#ifdef SHARDSCOPE_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace shardscope::engine {

struct LossReadback::Pending {
  std::vector<torch::Tensor> host;  ///< pinned fp64 scalars, one per queued micro-step
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  at::cuda::CUDAEvent copied;  ///< recorded after the last queued copy
#endif
};

LossReadback::LossReadback() : pending_(std::make_unique<Pending>()) {}
LossReadback::~LossReadback() = default;

void LossReadback::push(const torch::Tensor& loss) {
  torch::NoGradGuard no_grad;
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  if (loss.is_cuda()) {
    auto host = torch::empty({}, torch::TensorOptions().dtype(torch::kFloat64).pinned_memory(true));
    host.copy_(loss.detach().to(torch::kFloat64), /*non_blocking=*/true);
    pending_->copied.record(c10::cuda::getCurrentCUDAStream(loss.device().index()));
    pending_->host.push_back(std::move(host));
    return;
  }
#endif
  host_sum_ += loss.item<double>();
}

double LossReadback::take_sum() {
  double sum = host_sum_;
  host_sum_ = 0;
  if (pending_->host.empty()) return sum;
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  pending_->copied.synchronize();
#endif
  for (const auto& h : pending_->host) sum += h.item<double>();
  pending_->host.clear();
  return sum;
}

}  // namespace shardscope::engine
