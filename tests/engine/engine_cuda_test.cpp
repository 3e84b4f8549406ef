// The engine on a GPU: bf16 and fp16 training track fp32, and the fused CUDA optimizer kernels
// match the tensor-operation reference. Skipped, with the reason, where no GPU is visible.
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "engine/models/chunked_cross_entropy.hpp"
#include "engine/models/fused_layer_norm.hpp"
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

// The GPU loss (kernels/cuda_cross_entropy) against F.cross_entropy on fp32 logits and against
// the chunked path: the same value and gradient, ignored rows, and the gradient written over the
// logits when the caller owns them.
TEST(EngineCuda, FusedCrossEntropyEqualsCrossEntropyOfFp32Logits) {
  SKIP_WITHOUT_CUDA();
  namespace F = torch::nn::functional;
  const torch::Device cuda(torch::kCUDA, 0);
  torch::manual_seed(3);
  const std::int64_t rows = 96, vocab = 1000;
  const auto base = torch::randn({rows, vocab}, torch::TensorOptions().device(cuda)) * 4;
  auto targets = torch::randint(0, vocab, {rows}, torch::TensorOptions().device(cuda).dtype(torch::kLong));
  targets.index_put_({torch::tensor({5, 17, 90}, targets.options())}, -100);
  const auto upstream = torch::tensor(0.7, torch::TensorOptions().device(cuda));
  for (auto dtype : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    const auto ref_logits = base.to(dtype).to(torch::kFloat32).clone().requires_grad_(true);
    const auto ref = F::cross_entropy(ref_logits, targets, F::CrossEntropyFuncOptions().ignore_index(-100));
    ref.backward(upstream);
    for (bool fused : {true, false}) {
      const std::string what = std::string(c10::toString(dtype)) + (fused ? " fused" : " chunked");
      const auto logits = base.to(dtype).clone().requires_grad_(true);
      CrossEntropyOptions options;
      options.fused_on_gpu = fused;
      const auto ours = cross_entropy_loss(logits, targets, options);
      ours.backward(upstream);
      EXPECT_NEAR(ours.item<double>(), ref.item<double>(), 1e-5 * std::abs(ref.item<double>())) << what;
      ASSERT_EQ(logits.grad().scalar_type(), dtype) << what;
      const auto ours_grad = logits.grad().to(torch::kFloat64), ref_grad = ref_logits.grad().to(torch::kFloat64);
      const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1e-2;  // 16-bit: one rounding per element
      EXPECT_LT(((ours_grad - ref_grad).norm() / ref_grad.norm()).item<double>(), tolerance) << what;
      EXPECT_EQ(ours_grad[17].abs().sum().item<double>(), 0.0) << "an ignored row got a gradient, " << what;
    }
    // Over the logits: a non-leaf the caller owns (as the models' logits), its storage reused.
    const auto weight = base.to(dtype).clone().requires_grad_(true);
    const auto logits = weight * 1.0;
    CrossEntropyOptions over;
    over.gradient_over_logits = true;
    cross_entropy_loss(logits, targets, over).backward(upstream);
    const auto via_storage = logits.detach().to(torch::kFloat64);  // now the gradient
    const auto ref_grad = ref_logits.grad().to(torch::kFloat64);
    EXPECT_LT(((via_storage - ref_grad).norm() / ref_grad.norm()).item<double>(), dtype == torch::kFloat32 ? 1e-5 : 1e-2);
    EXPECT_TRUE(torch::equal(weight.grad(), logits.detach())) << c10::toString(dtype);
  }
}

// The models' LayerNorm on a GPU (kernels/cuda_layer_norm) against torch::nn::LayerNorm itself:
// output and the gradients of input, weight and bias, in bf16 and fp32.
TEST(EngineCuda, FusedLayerNormMatchesTorchLayerNorm) {
  SKIP_WITHOUT_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  torch::manual_seed(5);
  for (auto dtype : {torch::kBFloat16, torch::kFloat32}) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({768}).eps(1e-5));
    ln->to(cuda, dtype);
    {
      torch::NoGradGuard no_grad;
      ln->weight.normal_(1.0, 0.2);
      ln->bias.normal_(0.0, 0.2);
    }
    const auto x0 = (torch::randn({4, 33, 768}, torch::TensorOptions().device(cuda)) * 2 + 0.3).to(dtype);
    const auto dy = torch::randn({4, 33, 768}, torch::TensorOptions().device(cuda)).to(dtype);
    torch::Tensor out[2], dx[2], dw[2], db[2];
    for (int fused = 0; fused < 2; ++fused) {
      const auto x = x0.clone().requires_grad_(true);
      out[fused] = fused ? layer_norm(x, ln) : ln->forward(x);
      out[fused].backward(dy);
      dx[fused] = x.grad().to(torch::kFloat64);
      dw[fused] = ln->weight.grad().to(torch::kFloat64);
      db[fused] = ln->bias.grad().to(torch::kFloat64);
      ln->weight.mutable_grad().reset();
      ln->bias.mutable_grad().reset();
    }
    const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 1e-2;
    const auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
      return ((a.to(torch::kFloat64) - b.to(torch::kFloat64)).norm() / b.to(torch::kFloat64).norm()).item<double>();
    };
    const std::string what = c10::toString(dtype);
    EXPECT_EQ(out[1].scalar_type(), dtype) << what;
    EXPECT_LT(rel(out[1], out[0]), tolerance) << what << " y";
    EXPECT_LT(rel(dx[1], dx[0]), tolerance) << what << " dx";
    EXPECT_LT(rel(dw[1], dw[0]), tolerance) << what << " dweight";
    EXPECT_LT(rel(db[1], db[0]), tolerance) << what << " dbias";
  }
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
