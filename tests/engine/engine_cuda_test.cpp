// The engine on a GPU: bf16 and fp16 training track fp32, and the fused CUDA optimizer kernels
// match the tensor-operation reference. Skipped, with the reason, where no GPU is visible.
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "tests/engine/engine_test_support.hpp"

namespace shardscope::engine {
namespace {

using testing::fixed_batch;
using testing::resolved_config;
using testing::tiny_model;

#define SKIP_WITHOUT_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch"

std::vector<double> train_losses(const std::string& precision, torch::Device device, int steps) {
  EngineOptions options;
  options.device = device;
  Engine engine(tiny_model(ModelKind::kGpt2),
                resolved_config(R"({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "AdamW",
                  "params": {"lr": 0.003}}, )" + precision + "}"),
                options);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    auto loss = engine.forward(fixed_batch(ModelKind::kGpt2, i % 3, 4));
    losses.push_back(loss.item<double>());
    engine.backward(loss);
    engine.step();
  }
  return losses;
}

TEST(EngineCuda, Bf16AndFp16TrackFp32OnTheCpu) {
  SKIP_WITHOUT_CUDA();
  const auto reference = train_losses(R"("bf16": {"enabled": false})", torch::kCPU, 12);
  const auto fp32 = train_losses(R"("bf16": {"enabled": false})", torch::Device(torch::kCUDA, 0), 12);
  const auto bf16 = train_losses(R"("bf16": {"enabled": true})", torch::Device(torch::kCUDA, 0), 12);
  const auto fp16 = train_losses(R"("fp16": {"enabled": true, "initial_scale_power": 12})",
                                 torch::Device(torch::kCUDA, 0), 12);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    EXPECT_NEAR(fp32[i], reference[i], 1e-3 * reference[i]) << "fp32 step " << i;
    EXPECT_NEAR(bf16[i], reference[i], 0.03 * reference[i]) << "bf16 step " << i;
    EXPECT_NEAR(fp16[i], reference[i], 0.03 * reference[i]) << "fp16 step " << i;
  }
  EXPECT_LT(bf16.back(), bf16.front());
}

TEST(EngineCuda, FusedKernelsMatchTheTensorOpsReference) {
  SKIP_WITHOUT_CUDA();
  for (auto algorithm : {OptimizerAlgorithm::kAdamW, OptimizerAlgorithm::kLamb, OptimizerAlgorithm::kLion,
                         OptimizerAlgorithm::kAdagrad, OptimizerAlgorithm::kSgd}) {
    OptimizerSettings s;
    s.algorithm = algorithm;
    s.lr = 1e-3;
    s.weight_decay = 0.01;
    s.momentum = 0.9;
    torch::Tensor result[2];
    for (int backend = 0; backend < 2; ++backend) {
      auto options = torch::TensorOptions().device(torch::kCUDA);
      torch::Tensor master = torch::randn({100003}, at::detail::createCPUGenerator(3)).to(options.device());
      FlatOptimizer opt(s, master, torch::Tensor(), {{0, 50000}, {50000, 50003}});
      opt.set_backend(backend == 0 ? FlatOptimizer::Backend::kKernels : FlatOptimizer::Backend::kTensorOps);
      for (int step = 1; step <= 4; ++step) {
        // Two pieces, as ZeRO stages 2-3 hand the optimizer their per-group gradient chunks.
        const auto grads =
            torch::randn({100003}, at::detail::createCPUGenerator(static_cast<std::uint64_t>(step))).to(options.device());
        opt.step({{0, grads.narrow(0, 0, 50000).clone()}, {50000, grads.narrow(0, 50000, 50003).clone()}}, s.lr);
      }
      result[backend] = master.cpu().to(torch::kFloat64);
    }
    const double error = ((result[0] - result[1]).norm() / result[1].norm()).item<double>();
    EXPECT_LT(error, 1e-6) << optimizer_algorithm_name(algorithm);
  }
}

}  // namespace
}  // namespace shardscope::engine
