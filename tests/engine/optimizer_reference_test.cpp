// The engine's optimizers on flat buffers (CPU kernels) against independent references:
// torch::optim where LibTorch has the algorithm, the tensor-operation backend otherwise.
#include <gtest/gtest.h>

#include "engine/flat_optimizer.hpp"

namespace shardscope::engine {
namespace {

constexpr std::int64_t kNumel = 1037;  // not a multiple of any vector width
constexpr int kSteps = 5;

torch::Tensor grad_at(int step) {
  return torch::randn({kNumel}, at::detail::createCPUGenerator(static_cast<std::uint64_t>(50 + step)));
}

// ||a - b|| / ||b||, computed in double.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
  return ((a64 - b64).norm() / b64.norm()).item<double>();
}

// Runs our optimizer for kSteps on fixed gradients and returns the weights. The gradients come
// in one piece, or cut at `cuts` into separate tensors (as ZeRO stages 2-3 hold them).
torch::Tensor run_flat(const OptimizerSettings& s, FlatOptimizer::Backend backend,
                       const std::vector<std::int64_t>& cuts = {}) {
  torch::Tensor master = torch::randn({kNumel}, at::detail::createCPUGenerator(3));
  FlatOptimizer opt(s, master, torch::Tensor(), {{0, 400}, {400, kNumel - 400}});
  opt.set_backend(backend);
  for (int i = 1; i <= kSteps; ++i) {
    const torch::Tensor grads = grad_at(i);
    GradientPieces pieces;
    std::int64_t from = 0;
    for (std::int64_t to : cuts) {
      pieces.push_back({from, grads.narrow(0, from, to - from).clone()});
      from = to;
    }
    pieces.push_back({from, grads.narrow(0, from, kNumel - from).clone()});
    opt.step(pieces, s.lr);
  }
  return master;
}

template <typename TorchOptimizer, typename Options>
torch::Tensor run_torch(const Options& options) {
  torch::Tensor w = torch::randn({kNumel}, at::detail::createCPUGenerator(3)).requires_grad_(true);
  TorchOptimizer opt({w}, options);
  for (int i = 1; i <= kSteps; ++i) {
    w.mutable_grad() = grad_at(i);
    opt.step();
  }
  return w.detach();
}

TEST(OptimizerReference, AdamWMatchesTorch) {
  OptimizerSettings s;
  s.algorithm = OptimizerAlgorithm::kAdamW;
  s.lr = 1e-2;
  s.weight_decay = 0.1;
  const auto ours = run_flat(s, FlatOptimizer::Backend::kKernels);
  const auto ref = run_torch<torch::optim::AdamW>(torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  EXPECT_LT(relative_error(ours, ref), 1e-6);
}

TEST(OptimizerReference, AdamWithL2MatchesTorchAdam) {
  OptimizerSettings s;
  s.algorithm = OptimizerAlgorithm::kAdam;  // adam_w_mode false: L2 added to the gradient
  s.lr = 1e-2;
  s.weight_decay = 0.1;
  const auto ours = run_flat(s, FlatOptimizer::Backend::kKernels);
  const auto ref = run_torch<torch::optim::Adam>(torch::optim::AdamOptions(1e-2).weight_decay(0.1));
  EXPECT_LT(relative_error(ours, ref), 1e-6);
}

TEST(OptimizerReference, AdagradMatchesTorch) {
  OptimizerSettings s;
  s.algorithm = OptimizerAlgorithm::kAdagrad;
  s.lr = 1e-2;
  s.eps = 1e-10;
  s.lr_decay = 0.01;
  s.weight_decay = 0.05;
  const auto ours = run_flat(s, FlatOptimizer::Backend::kKernels);
  const auto ref = run_torch<torch::optim::Adagrad>(
      torch::optim::AdagradOptions(1e-2).lr_decay(0.01).weight_decay(0.05).eps(1e-10));
  EXPECT_LT(relative_error(ours, ref), 1e-6);
}

TEST(OptimizerReference, SgdNesterovMatchesTorch) {
  OptimizerSettings s;
  s.algorithm = OptimizerAlgorithm::kSgd;
  s.lr = 0.05;
  s.momentum = 0.9;
  s.nesterov = true;
  s.weight_decay = 0.01;
  const auto ours = run_flat(s, FlatOptimizer::Backend::kKernels);
  const auto ref = run_torch<torch::optim::SGD>(
      torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
  EXPECT_LT(relative_error(ours, ref), 1e-6);
}

TEST(OptimizerReference, LambAndLionMatchTheTensorOpsFormulation) {
  for (auto algorithm : {OptimizerAlgorithm::kLamb, OptimizerAlgorithm::kLion}) {
    OptimizerSettings s;
    s.algorithm = algorithm;
    s.lr = 1e-3;
    s.weight_decay = 0.01;
    const auto ours = run_flat(s, FlatOptimizer::Backend::kKernels);
    const auto ref = run_flat(s, FlatOptimizer::Backend::kTensorOps);
    EXPECT_LT(relative_error(ours, ref), 1e-6) << optimizer_algorithm_name(algorithm);
  }
}

TEST(OptimizerReference, GradientsInPiecesGiveTheSameUpdate) {
  for (auto algorithm : {OptimizerAlgorithm::kAdamW, OptimizerAlgorithm::kLamb, OptimizerAlgorithm::kLion,
                         OptimizerAlgorithm::kAdagrad, OptimizerAlgorithm::kSgd}) {
    OptimizerSettings s;
    s.algorithm = algorithm;
    s.lr = 1e-3;
    s.weight_decay = 0.01;
    s.momentum = 0.9;
    for (auto backend : {FlatOptimizer::Backend::kKernels, FlatOptimizer::Backend::kTensorOps}) {
      const auto whole = run_flat(s, backend);
      // Cuts at odd places (inside vector widths); Lamb's cut stays on its tensor boundary.
      const std::vector<std::int64_t> cuts = algorithm == OptimizerAlgorithm::kLamb
                                                 ? std::vector<std::int64_t>{400}
                                                 : std::vector<std::int64_t>{3, 400, 771};
      const auto pieces = run_flat(s, backend, cuts);
      EXPECT_LT(relative_error(pieces, whole), 1e-7) << optimizer_algorithm_name(algorithm);
      EXPECT_GT(relative_error(whole, torch::randn({kNumel}, at::detail::createCPUGenerator(3))), 1e-5)
          << "the steps changed nothing";
    }
  }
}

TEST(OptimizerReference, GradientPiecesMustCoverTheMasterAndKeepLambTensorsWhole) {
  OptimizerSettings s;
  s.algorithm = OptimizerAlgorithm::kLamb;
  torch::Tensor master = torch::randn({kNumel});
  FlatOptimizer opt(s, master, torch::Tensor(), {{0, 400}, {400, kNumel - 400}});
  const auto g = torch::randn({kNumel});
  EXPECT_THROW(opt.step({{0, g.narrow(0, 0, 500)}}, s.lr), c10::Error);  // 537 elements have no gradient
  try {
    opt.step({{0, g.narrow(0, 0, 500).clone()}, {500, g.narrow(0, 500, kNumel - 500).clone()}}, s.lr);
    FAIL() << "a Lamb tensor split across pieces was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("no gradient piece holds the tensor at 400"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(OptimizerReference, ConfigMapping) {
  configs::OptimizerConfig c;
  c.present = true;
  c.type = "Adam";
  c.kind = configs::OptimizerKind::kAdam;
  EXPECT_EQ(optimizer_settings_from_config(c).algorithm, OptimizerAlgorithm::kAdamW);  // adam_w_mode default
  c.adam_w_mode = false;
  EXPECT_EQ(optimizer_settings_from_config(c).algorithm, OptimizerAlgorithm::kAdam);
  c.kind = configs::OptimizerKind::kTorch;
  c.type = "RMSprop";
  EXPECT_THROW(optimizer_settings_from_config(c), std::invalid_argument);
  c.present = false;
  EXPECT_THROW(optimizer_settings_from_config(c), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::engine
