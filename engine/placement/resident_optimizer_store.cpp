// The master and optimizer state of a range in memory, stepped where they live: by the device's
// kernels, or by the CPU kernels for CPU offload (DeepSpeedCPUAdam's counterpart).
#include <torch/torch.h>

#include <cstdio>

#include "engine/placement/optimizer_store.hpp"

namespace shardscope::engine {
namespace {

// Pieces of `grads` inside `range`, with offsets relative to its start.
GradientPieces pieces_within(const GradientPieces& grads, ShardRange range) {
  GradientPieces out;
  for (const auto& piece : grads) {
    const std::int64_t begin = std::max(piece.offset, range.offset);
    const std::int64_t end = std::min(piece.offset + piece.grads.numel(), range.offset + range.numel);
    if (begin >= end) continue;
    out.push_back({begin - range.offset, piece.grads.narrow(0, begin - piece.offset, end - begin)});
  }
  return out;
}

class ResidentOptimizerStore : public OptimizerStore {
 public:
  ResidentOptimizerStore(const OptimizerSettings& settings, ShardRange range, Tier tier, torch::Tensor master,
                         torch::Tensor model_copy, std::vector<TensorSegment> segments)
      : OptimizerStore(range), tier_(tier), model_copy_(model_copy),
        optimizer_(settings, std::move(master), std::move(model_copy), std::move(segments)) {}

  Tier tier() const override { return tier_; }

  void step(const GradientPieces& grads, const StepArgs& args, ParamShard& shard) override {
    optimizer_.set_step_count(args.step - 1);  // the shard optimizer counts the steps
    optimizer_.step(pieces_within(grads, range_), args.lr, args.beta1, args.beta2, args.grad_scale);
    update_shard(shard);
  }

  void save_into(torch::Tensor& master, std::map<std::string, torch::Tensor>& state) override {
    master.narrow(0, range_.offset, range_.numel).copy_(optimizer_.master());
    for (const auto& [name, buffer] : optimizer_.state()) state.at(name).narrow(0, range_.offset, range_.numel).copy_(buffer);
  }

  void load_from(const torch::Tensor& master, const std::map<std::string, torch::Tensor>& state,
                 ParamShard& shard) override {
    torch::NoGradGuard no_grad;
    optimizer_.master().copy_(master.narrow(0, range_.offset, range_.numel));
    std::map<std::string, torch::Tensor> mine;
    for (const auto& [name, buffer] : state) mine[name] = buffer.narrow(0, range_.offset, range_.numel);
    optimizer_.load_state(mine, optimizer_.step_count());
    if (!shard.aliases(optimizer_.master()))  // the 16-bit weights from the fp32 master (load_from_fp32_weights)
      shard.write(range_.offset, optimizer_.master(), /*non_blocking=*/false);
  }

  void refresh_master(ParamShard& shard) override {
    torch::NoGradGuard no_grad;
    if (!shard.aliases(optimizer_.master())) optimizer_.master().copy_(shard.read(range_.offset, range_.numel));
  }

  void collect_memory(std::vector<torch::Tensor>& out) const override {
    out.push_back(optimizer_.master());
    for (const auto& [name, t] : optimizer_.state()) out.push_back(t);
    out.push_back(model_copy_);
  }
  std::int64_t state_bytes() const override { return optimizer_.state_bytes(); }
  const FlatOptimizer* resident() const override { return &optimizer_; }

  std::string describe() const override {
    char text[160];
    std::snprintf(text, sizeof text, "%s state of %lld element(s) (%.1f MiB) in %s%s memory",
                  optimizer_.settings().type_name.c_str(), static_cast<long long>(range_.numel),
                  static_cast<double>(memory_bytes()) / (1024.0 * 1024.0),
                  optimizer_.master().is_pinned() ? "pinned " : "", tier_ == Tier::kDevice ? "device" : "CPU");
    return text;
  }

 private:
  // The updated weights into the shard: nothing when the shard is the master or the kernel wrote
  // them in place; else the 16-bit copy (or the fp32 master) goes there. From pinned memory the
  // copy is ordered on the stream before the gathers that read it; the host buffer is next
  // written after the next backward's gradients were synchronized.
  void update_shard(ParamShard& shard) {
    if (shard.aliases(optimizer_.master())) return;
    if (model_copy_.defined() && shard.aliases(model_copy_)) return;
    if (model_copy_.defined()) {
      auto view = shard.writable_view(range_.offset, range_.numel, model_copy_.device());
      if (view.defined() && view.data_ptr() == model_copy_.data_ptr()) return;
    }
    shard.write(range_.offset, model_copy_.defined() ? model_copy_ : optimizer_.master(), /*non_blocking=*/true);
  }

  Tier tier_;
  torch::Tensor model_copy_;
  FlatOptimizer optimizer_;
};

}  // namespace

std::int64_t OptimizerStore::memory_bytes() const {
  std::vector<torch::Tensor> held;
  collect_memory(held);
  return unique_storage_bytes(held);
}

std::unique_ptr<OptimizerStore> make_resident_optimizer_store(const OptimizerSettings& settings, ShardRange range,
                                                              Tier tier, torch::Tensor master, torch::Tensor model_copy,
                                                              std::vector<TensorSegment> segments) {
  return std::make_unique<ResidentOptimizerStore>(settings, range, tier, std::move(master), std::move(model_copy),
                                                  std::move(segments));
}

}  // namespace shardscope::engine
