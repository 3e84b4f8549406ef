// The engine's training contract on the CPU: loss falls, accumulation equals a large batch,
// fp16 overflow skips exactly the overflowing steps, bf16 tracks fp32, resume is exact.
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "tests/engine/engine_test_support.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::engine {
namespace {

using testing::fixed_batch;
using testing::resolved_config;
using testing::tiny_model;

std::string config_json(const std::string& extra, int micro_batch = 8, int gas = 1,
                        const std::string& optimizer = R"({"type": "AdamW", "params": {"lr": 0.01}})") {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(gas) + R"(, "optimizer": )" + optimizer +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// Trains `steps` optimizer steps on batches [first, first + steps*gas) and returns the mean loss of
// each step.
std::vector<double> train(Engine& engine, ModelKind kind, std::int64_t first_batch, int steps) {
  std::vector<double> losses;
  const auto gas = engine.gradient_accumulation_steps();
  const auto mb = engine.train_micro_batch_size_per_gpu();
  std::int64_t index = first_batch * gas;
  for (int s = 0; s < steps; ++s) {
    double total = 0;
    for (std::int64_t m = 0; m < gas; ++m) {
      auto loss = engine.forward(fixed_batch(kind, index++, mb));
      total += loss.item<double>();
      engine.backward(loss);
      engine.step();
    }
    losses.push_back(total / static_cast<double>(gas));
  }
  return losses;
}

TEST(Engine, LossFallsOnTheMlp) {
  Engine engine(tiny_model(ModelKind::kMlp), resolved_config(config_json("")));
  const auto losses = train(engine, ModelKind::kMlp, 0, 60);
  EXPECT_LT(losses.back(), 0.3 * losses.front()) << losses.front() << " -> " << losses.back();
  EXPECT_EQ(engine.global_steps(), 60);
  EXPECT_EQ(engine.global_samples(), 60 * 8);
}

TEST(Engine, LossFallsOnATinyGpt) {
  Engine engine(tiny_model(ModelKind::kGpt2), resolved_config(config_json("", 4)));
  std::vector<double> losses;
  for (int i = 0; i < 40; ++i) {  // a few batches over and over: the model memorises them
    auto loss = engine.forward(fixed_batch(ModelKind::kGpt2, i % 2, 4));
    losses.push_back(loss.item<double>());
    engine.backward(loss);
    engine.step();
  }
  EXPECT_NEAR(losses.front(), std::log(64.0), 0.5);  // ln(vocab) at initialisation
  EXPECT_LT(losses.back(), 0.8 * losses.front());
}

TEST(Engine, AccumulationEqualsOneLargeMicroBatch) {
  const std::string sgd = R"({"type": "SGD", "params": {"lr": 0.1}})";
  Engine accumulated(tiny_model(ModelKind::kMlp), resolved_config(config_json(R"("gradient_clipping": 0)", 2, 4, sgd)));
  Engine large(tiny_model(ModelKind::kMlp), resolved_config(config_json(R"("gradient_clipping": 0)", 8, 1, sgd)));
  for (std::int64_t step = 0; step < 3; ++step) {
    const Batch big = fixed_batch(ModelKind::kMlp, step, 8);
    for (int m = 0; m < 4; ++m) {
      const Batch part{big.inputs.narrow(0, 2 * m, 2), big.targets.narrow(0, 2 * m, 2)};
      accumulated.backward(accumulated.forward(part));
      const auto outcome = accumulated.step();
      EXPECT_EQ(outcome.boundary, m == 3);
    }
    large.backward(large.forward(big));
    const auto outcome = large.step();
    ASSERT_TRUE(outcome.grad_norm);
  }
  const auto& a = accumulated.master_weights();
  const auto& b = large.master_weights();
  EXPECT_LT(((a - b).abs().max() / b.abs().max()).item<double>(), 1e-6);
  EXPECT_EQ(accumulated.global_steps(), 3);
  EXPECT_EQ(accumulated.micro_steps(), 12);
}

TEST(Engine, Fp16OverflowSkipsExactlyTheOverflowingSteps) {
  // 2^30 makes every fp16 gradient overflow at first; hysteresis 1 halves at each overflow.
  Engine engine(tiny_model(ModelKind::kMlp),
                resolved_config(config_json(R"("fp16": {"enabled": true, "initial_scale_power": 30, "hysteresis": 1})")));
  std::vector<std::string> messages;
  int skipped = 0;
  double expected_scale = std::ldexp(1.0, 30);
  for (int i = 0; i < 40; ++i) {
    auto loss = engine.forward(fixed_batch(ModelKind::kMlp, i, 8));
    engine.backward(loss);
    const bool overflowed = !torch::isfinite(engine.zero().full_grads()).all().item<bool>();
    const torch::Tensor before = engine.master_weights().clone();
    const auto outcome = engine.step();
    EXPECT_EQ(outcome.skipped, overflowed) << "step " << i;
    EXPECT_DOUBLE_EQ(outcome.loss_scale, expected_scale);
    if (overflowed) {
      ++skipped;
      EXPECT_TRUE(torch::equal(before, engine.master_weights())) << "a skipped step changed the weights";
      ASSERT_TRUE(outcome.overflow_message);
      EXPECT_NE(outcome.overflow_message->find("OVERFLOW! Rank 0 Skipping step. Attempted loss scale: " +
                                               std::to_string(static_cast<long long>(expected_scale)) +
                                               ", reducing to " +
                                               std::to_string(static_cast<long long>(expected_scale / 2))),
                std::string::npos)
          << *outcome.overflow_message;
      expected_scale /= 2;
    } else {
      EXPECT_FALSE(torch::equal(before, engine.master_weights()));
    }
    EXPECT_DOUBLE_EQ(engine.loss_scale(), expected_scale);
  }
  EXPECT_GT(skipped, 5);
  EXPECT_LT(skipped, 40);
  EXPECT_EQ(engine.skipped_steps(), skipped);
  EXPECT_EQ(engine.global_steps(), 40);  // skipped steps count as steps, as in DeepSpeed
}

TEST(Engine, Bf16TracksFp32WithinBf16Tolerance) {
  Engine fp32(tiny_model(ModelKind::kGpt2), resolved_config(config_json("", 4)));
  Engine bf16(tiny_model(ModelKind::kGpt2), resolved_config(config_json(R"("bf16": {"enabled": true})", 4)));
  EXPECT_EQ(bf16.model_dtype(), torch::kBFloat16);
  const auto a = train(fp32, ModelKind::kGpt2, 0, 8);
  const auto b = train(bf16, ModelKind::kGpt2, 0, 8);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 0.03 * a[i]) << "step " << i;
}

class EngineResume : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineResume, ResumedRunContinuesWithTheSameLosses) {
  const test::TempDir dir;
  const auto config = resolved_config(config_json(GetParam() + R"(, "scheduler": {"type": "WarmupLR",
      "params": {"warmup_num_steps": 4, "warmup_max_lr": 0.01}})", 4, 2));
  Engine uninterrupted(tiny_model(ModelKind::kGpt2), config);
  const auto expected = train(uninterrupted, ModelKind::kGpt2, 0, 6);

  Engine first(tiny_model(ModelKind::kGpt2), config);
  train(first, ModelKind::kGpt2, 0, 3);
  first.save_checkpoint(dir.file(""), std::nullopt, R"({"data_position": 3})");
  EXPECT_TRUE(dir.exists("latest"));
  EXPECT_TRUE(dir.exists("global_step3/mp_rank_00_model_states.pt"));

  Engine resumed(tiny_model(ModelKind::kGpt2, /*seed=*/99), config);  // other weights until loaded
  EXPECT_EQ(resumed.load_checkpoint(dir.file("")), R"({"data_position": 3})");
  EXPECT_EQ(resumed.global_steps(), 3);
  const auto rest = train(resumed, ModelKind::kGpt2, 3, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rest[i], expected[3 + i]) << "step " << 3 + i;  // bitwise
  EXPECT_TRUE(torch::equal(resumed.master_weights(), uninterrupted.master_weights()));
}

INSTANTIATE_TEST_SUITE_P(Precisions, EngineResume,
                         ::testing::Values(R"("bf16": {"enabled": false})", R"("bf16": {"enabled": true})"));

TEST(Engine, LoadingAMissingCheckpointSaysWhere) {
  Engine engine(tiny_model(ModelKind::kMlp), resolved_config(config_json("")));
  try {
    engine.load_checkpoint("/nonexistent/ckpt");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ckpt/latest"), std::string::npos) << e.what();
  }
}

TEST(Engine, StepInsideNoSyncAtABoundaryIsAnError) {
  Engine engine(tiny_model(ModelKind::kMlp), resolved_config(config_json("", 8, 2)));
  auto guard = engine.no_sync();
  engine.backward(engine.forward(fixed_batch(ModelKind::kMlp, 0, 8)));
  EXPECT_FALSE(engine.step().boundary);  // inside the window: fine
  engine.backward(engine.forward(fixed_batch(ModelKind::kMlp, 1, 8)));
  EXPECT_THROW(engine.step(), std::logic_error);
}

}  // namespace
}  // namespace shardscope::engine
