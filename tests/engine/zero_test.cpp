// ZeRO stages 0-3 across ranks on the CPU (Gloo, ranks as threads): the same losses as one rank
// with the same global batch, optimizer state split 1/N, stage-3 parameters empty outside a
// gather, GatheredParameters with a modifier rank, and checkpoints resumed at other world sizes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_partitioning.hpp"
#include "engine/data/sample_dataset.hpp"
#include "engine/engine.hpp"
#include "engine/gathered_parameters.hpp"
#include "engine/zero/partitioned_init.hpp"
#include "tests/engine/engine_test_support.hpp"
#include "tests/engine/rank_threads.hpp"
#include "tests/engine/temp_dir.hpp"

namespace shardscope::engine {
namespace {

using testing::fixed_batch;
using testing::resolved_config;
using testing::run_ranks;
using testing::tiny_model;

constexpr int kGlobalBatch = 8;

std::string config_json(int stage, int micro_batch, int gas, const std::string& extra = "", int persistence = 100) {
  return R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
         R"(, "gradient_accumulation_steps": )" + std::to_string(gas) +
         R"(, "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}},
             "gradient_clipping": 0.5,
             "zero_optimization": {"stage": )" + std::to_string(stage) +
         R"(, "reduce_bucket_size": 600, "stage3_prefetch_bucket_size": 3000,
             "stage3_max_reuse_distance": 0, "stage3_param_persistence_threshold": )" +
         std::to_string(persistence) + extra + "}}";
}

// Models are built before the rank threads start: torch's default generator is global.
std::vector<std::shared_ptr<TrainableModel>> models(int world, ModelKind kind = ModelKind::kGpt2) {
  std::vector<std::shared_ptr<TrainableModel>> list;
  for (int r = 0; r < world; ++r) list.push_back(tiny_model(kind));
  return list;
}

// Trains `steps` steps of the global batches starting at `first`; this rank takes its slice of
// each micro-batch. Returns the loss of each step averaged over the ranks.
std::vector<double> train(Engine& engine, int first, int steps, ModelKind kind = ModelKind::kGpt2) {
  std::vector<double> losses;
  const int world = engine.world_size(), rank = engine.rank();
  const auto gas = engine.gradient_accumulation_steps();
  const auto mb = engine.train_micro_batch_size_per_gpu();
  for (int s = first; s < first + steps; ++s) {
    double total = 0;
    for (std::int64_t m = 0; m < gas; ++m) {
      const Batch global = fixed_batch(kind, (s * gas + m) % 4, mb * world);  // 4 batches, learnable
      const Batch mine{global.inputs.narrow(0, rank * mb, mb), global.targets.narrow(0, rank * mb, mb)};
      auto loss = engine.forward(mine);
      total += loss.item<double>();
      engine.backward(loss);
      engine.step();
    }
    double mean = total / static_cast<double>(gas);
    if (auto* comm = engine.communicator()) mean = comm->all_reduce_scalar(mean, ReduceOp::kSum) / world;
    losses.push_back(mean);
  }
  return losses;
}

std::vector<double> single_rank_losses(int steps, int gas = 1, const std::string& extra = "") {
  Engine engine(tiny_model(ModelKind::kGpt2), resolved_config(config_json(0, kGlobalBatch / gas, gas, extra)));
  return train(engine, 0, steps);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LT(std::abs(got[i] - want[i]) / std::abs(want[i]), 1e-5)
        << what << " step " << i << ": " << got[i] << " vs one rank's " << want[i];
}

class StageMatchesOneRank : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(StageMatchesOneRank, TwentyStepsSameLosses) {
  const auto [stage, world] = GetParam();
  const auto reference = single_rank_losses(20);
  auto list = models(world);
  std::vector<std::vector<double>> losses(world);
  run_ranks(world, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    Engine engine(list[rank], resolved_config(config_json(stage, kGlobalBatch / world, 1)), options);
    losses[rank] = train(engine, 0, 20);
  });
  expect_close(losses[0], reference, "stage " + std::to_string(stage) + " x" + std::to_string(world));
  EXPECT_LT(reference.back(), reference.front());
}

INSTANTIATE_TEST_SUITE_P(Zero, StageMatchesOneRank,
                         ::testing::Values(std::make_tuple(0, 2), std::make_tuple(1, 2), std::make_tuple(2, 2),
                                           std::make_tuple(3, 2), std::make_tuple(0, 4), std::make_tuple(1, 4),
                                           std::make_tuple(2, 4), std::make_tuple(3, 4)),
                         [](const auto& info) {
                           return "stage" + std::to_string(std::get<0>(info.param)) + "_ranks" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Zero, AccumulationAndOverlapMatchOneRank) {
  const auto reference = single_rank_losses(8, 2);
  for (int stage : {1, 2, 3}) {
    for (const char* extra : {R"(, "overlap_comm": true)", R"(, "overlap_comm": true, "contiguous_gradients": false)"}) {
      auto list = models(2);
      std::vector<double> losses;
      run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
        EngineOptions options;
        options.communicator = comm;
        Engine engine(list[rank], resolved_config(config_json(stage, 2, 2, extra)), options);
        auto l = train(engine, 0, 8);
        if (rank == 0) losses = l;
      });
      expect_close(losses, reference, "stage " + std::to_string(stage) + extra);
    }
  }
}

// offload_optimizer to the CPU: the master and optimizer state are host buffers apart from the
// shard the runtime gathers, the CPU kernels step them, and the losses are those of one rank.
TEST(Zero, OptimizerOffloadMatchesOneRank) {
  const auto reference = single_rank_losses(8, 2);
  for (int stage : {1, 2, 3}) {
    auto list = models(2);
    std::vector<double> losses;
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      EngineOptions options;
      options.communicator = comm;
      Engine engine(list[rank],
                    resolved_config(config_json(stage, 2, 2, R"(, "offload_optimizer": {"device": "cpu"})")), options);
      EXPECT_TRUE(engine.master_weights().is_cpu());
      EXPECT_NE(engine.master_weights().data_ptr(), engine.zero().optimizer_params().data_ptr())
          << "stage " << stage << ": the master must be a host buffer of its own";
      auto l = train(engine, 0, 8);
      if (rank == 0) losses = l;
    });
    expect_close(losses, reference, "offload at stage " + std::to_string(stage));
  }
}

// offload_param at stage 3 (alone and with offload_optimizer): the 16-bit shard is a host buffer
// the gathers read from, and the losses are those of one rank.
TEST(Zero, ParameterOffloadMatchesOneRank) {
  const auto reference = single_rank_losses(8, 2);
  for (const char* extra : {R"(, "offload_param": {"device": "cpu"})",
                            R"(, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "cpu"})"}) {
    auto list = models(2);
    std::vector<double> losses;
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      EngineOptions options;
      options.communicator = comm;
      Engine engine(list[rank], resolved_config(config_json(3, 2, 2, extra)), options);
      EXPECT_NE(engine.master_weights().data_ptr(), engine.zero().optimizer_params().data_ptr()) << extra;
      auto l = train(engine, 0, 8);
      if (rank == 0) losses = l;
    });
    expect_close(losses, reference, std::string("stage 3") + extra);
  }
}

// This rank's reduced gradients of the window so far, as its whole shard in fp32.
torch::Tensor whole_shard_gradients(const ZeroRuntime& zero) {
  torch::Tensor whole = torch::zeros({zero.layout().shard_numel()});
  for (const auto& piece : zero.gradient_pieces())
    whole.narrow(0, piece.offset, piece.grads.numel()).copy_(piece.grads.to(torch::kFloat32));
  return whole;
}

// Rank 0's whole_shard_gradients after each backward of one 3-micro-step window.
std::vector<torch::Tensor> window_gradients(int stage, const std::string& extra, bool expect_one_host_piece) {
  constexpr int kGas = 3;
  auto list = models(2);
  std::vector<torch::Tensor> sums;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    Engine engine(list[rank], resolved_config(config_json(stage, 2, kGas, extra)), options);
    const auto& zero = engine.zero();
    for (int micro = 0; micro < kGas; ++micro) {
      const Batch global = fixed_batch(ModelKind::kGpt2, micro, 4);
      engine.backward(engine.forward({global.inputs.narrow(0, rank * 2, 2), global.targets.narrow(0, rank * 2, 2)}));
      if (expect_one_host_piece) {
        const auto pieces = zero.gradient_pieces();
        ASSERT_EQ(pieces.size(), 1u) << "stage " << stage << " micro-step " << micro << ": one host piece, no device chunk";
        EXPECT_EQ(pieces[0].grads.numel(), zero.layout().shard_numel());
      }
      if (rank == 0) sums.push_back(whole_shard_gradients(zero));
      engine.step();
    }
    EXPECT_TRUE(zero.gradient_pieces().empty()) << "stage " << stage << " after the step";
  });
  return sums;
}

// With offload_optimizer at stages 2-3 the window's running sum lives in the host buffer from its
// first micro-step on (DeepSpeed's grad_partitions_flat_buffer), never in device chunks, and
// after every micro-step it equals the sum that the run without offload accumulates.
TEST(Zero, OffloadedGradientsAccumulateOnTheHost) {
  for (int stage : {2, 3}) {
    const auto on_device = window_gradients(stage, "", false);
    const auto on_host = window_gradients(stage, R"(, "offload_optimizer": {"device": "cpu"})", true);
    ASSERT_EQ(on_host.size(), on_device.size());
    for (std::size_t m = 0; m < on_host.size(); ++m) {
      EXPECT_GT(on_host[m].abs().sum().item<double>(), 0.0);
      EXPECT_TRUE(torch::allclose(on_host[m], on_device[m], 1e-5, 1e-7))
          << "stage " << stage << " micro-step " << m << ": max difference "
          << (on_host[m] - on_device[m]).abs().max().item<double>();
    }
    EXPECT_FALSE(torch::allclose(on_host[2], on_host[0])) << "the later micro-steps must add to the sum";
  }
}

// DeepSpeed's stage 1-2 optimizer treats every offload device but "none" as CPU offload: so does
// the engine, and it says so at the start.
TEST(Zero, NvmeBelowStage3RunsAsCpuOffloadAndSaysSo) {
  std::vector<std::string> lines;
  EngineOptions options;
  options.log = [&](const std::string& line) { lines.push_back(line); };
  Engine engine(tiny_model(ModelKind::kGpt2),
                resolved_config(config_json(2, 8, 1, R"(, "offload_optimizer": {"device": "nvme", "nvme_path": "/nonexistent"})")),
                options);
  EXPECT_EQ(engine.placement().optimizer, Tier::kHost);
  EXPECT_TRUE(engine.master_weights().is_cpu());
  bool noted = false, offload_line = false;
  for (const auto& line : lines) {
    noted |= line.find("note: offload_optimizer.device \"nvme\" at ZeRO stage 2 runs as CPU offload") != std::string::npos;
    offload_line |= line.find("ZeRO-Offload: the fp32 master, AdamW state and gradients") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(offload_line);
}

TEST(Zero, OptimizerStateIsOneNthPerRank) {
  Engine one(tiny_model(ModelKind::kGpt2), resolved_config(config_json(0, 8, 1)));
  const std::int64_t total = one.optimizer().state_bytes();
  for (int stage : {1, 2, 3}) {
    auto list = models(4);
    std::vector<std::int64_t> bytes(4), master(4);
    run_ranks(4, [&](int rank, std::shared_ptr<Communicator> comm) {
      EngineOptions options;
      options.communicator = comm;
      Engine engine(list[rank], resolved_config(config_json(stage, 2, 1)), options);
      train(engine, 0, 1);
      bytes[rank] = engine.optimizer().state_bytes();
      master[rank] = engine.master_weights().numel();
    });
    // Each rank holds exactly its shard: a quarter of the padded buffers (padding < 4 per group).
    const auto groups = static_cast<std::int64_t>(one.zero().slots().size());
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(bytes[r], bytes[0]);
      EXPECT_GE(bytes[r] * 4, total) << "stage " << stage;
      EXPECT_LE(bytes[r] * 4, total + 2 * 4 * 4 * 3 * groups) << "stage " << stage;
      EXPECT_LE(master[r] * 4, one.parameter_count() + 3 * groups);
    }
  }
}

// Stages 2-3 hold gradients only between the backward and the step: per-group fp32 chunks of this
// rank's shard, kept across the micro-steps of an accumulation window and freed by the step.
TEST(Zero, PartitionedGradientsExistOnlyFromBackwardToStep) {
  for (int stage : {2, 3}) {
    auto list = models(2);
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      EngineOptions options;
      options.communicator = comm;
      Engine engine(list[rank], resolved_config(config_json(stage, 2, 2)), options);
      const auto& zero = engine.zero();
      EXPECT_TRUE(zero.gradient_pieces().empty()) << "stage " << stage << " before any backward";
      for (int micro = 0; micro < 2; ++micro) {
        const Batch global = fixed_batch(ModelKind::kGpt2, micro, 4);
        auto loss = engine.forward({global.inputs.narrow(0, rank * 2, 2), global.targets.narrow(0, rank * 2, 2)});
        engine.backward(loss);
        std::int64_t covered = 0;
        for (const auto& piece : zero.gradient_pieces()) {
          EXPECT_EQ(piece.grads.scalar_type(), torch::kFloat32);
          covered += piece.grads.numel();
        }
        EXPECT_EQ(covered, zero.layout().shard_numel()) << "stage " << stage << " micro-step " << micro;
        EXPECT_EQ(zero.gradient_pieces().size(), zero.layout().groups().size());
        engine.step();
      }
      EXPECT_TRUE(zero.gradient_pieces().empty()) << "stage " << stage << " after the step";
      EXPECT_EQ(engine.global_steps(), 1);
    });
  }
}

// A rank that never issues a collective: the ranks waiting in it time out with a message that
// names the collective and that rank only, with its step and the last collective it did issue.
TEST(Zero, TimeoutNamesTheRankThatDidNotArrive) {
  std::string message;
  run_ranks(
      3,
      [&](int rank, std::shared_ptr<Communicator> comm) {
        auto t = torch::ones({4});
        comm->report_progress(7);
        comm->all_reduce(t, ReduceOp::kSum, "warm-up").wait();
        if (rank == 2) {  // skips the next collective, alive and reporting meanwhile
          std::this_thread::sleep_for(std::chrono::seconds(3));
          return;
        }
        try {
          comm->all_reduce(t, ReduceOp::kSum, "grad bucket 3").wait();
          ADD_FAILURE() << "rank " << rank << ": the collective completed without rank 2";
        } catch (const CommTimeout& e) {
          if (rank == 0) message = e.what();
        }
      },
      /*cuda=*/false, std::chrono::seconds(1));
  EXPECT_NE(message.find("all_reduce (grad bucket 3) of "), std::string::npos) << message;
  EXPECT_NE(message.find("collective #2 of this rank, at step 7"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 2: at step 7, 1 collective(s) issued, the latest all_reduce (warm-up)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("rank 1:"), std::string::npos) << "rank 1 had issued it\n" << message;
  EXPECT_NE(message.find("SHARDSCOPE_COMM_TIMEOUT"), std::string::npos) << message;
}

TEST(Zero, Stage3ParametersHoldNoDataOutsideAGather) {
  auto list = models(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    Engine engine(list[rank], resolved_config(config_json(3, 4, 1, "", /*persistence=*/0)),
                  options);
    for (const auto& slot : engine.zero().slots()) EXPECT_EQ(slot.param.numel(), 0) << slot.name << " after init";
    train(engine, 0, 2);
    for (const auto& slot : engine.zero().slots()) EXPECT_EQ(slot.param.numel(), 0) << slot.name << " after a step";
    EXPECT_GT(engine.zero().gather_stats().gathers, 0);
    EXPECT_EQ(engine.zero().gather_stats().live_numel, 0);
    {
      GatheredParameters gathered(engine);
      for (const auto& slot : engine.zero().slots()) {
        EXPECT_EQ(slot.param.sizes().vec(), slot.shape) << slot.name << " inside GatheredParameters";
        const double sum = slot.param.sum().item<double>();
        const double total = comm->all_reduce_scalar(sum, ReduceOp::kSum);
        EXPECT_NEAR(total, 2 * sum, 1e-6 * std::max(1.0, std::abs(sum))) << slot.name << " differs between ranks";
      }
    }
    for (const auto& slot : engine.zero().slots()) EXPECT_EQ(slot.param.numel(), 0) << slot.name << " after the scope";
  });
}

TEST(Zero, GatheredParametersWithModifierRankUpdatesEveryPartition) {
  for (int stage : {1, 3}) {
    auto list = models(2);
    run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
      EngineOptions options;
      options.communicator = comm;
      Engine engine(list[rank], resolved_config(config_json(stage, 4, 1)), options);
      train(engine, 0, 1);
      const auto& slot = engine.zero().slots().front();  // the token embedding
      {
        GatheredParameters gathered(engine, /*modifier_rank=*/1);
        torch::NoGradGuard no_grad;
        if (rank == 1) slot.param.fill_(0.25);
      }
      GatheredParameters check(engine);
      EXPECT_TRUE(torch::allclose(slot.param, torch::full_like(slot.param, 0.25))) << "stage " << stage << " rank " << rank;
    });
  }
}

// One rank in bf16: stage 3 keeps a 16-bit copy of the whole model that the optimizer writes and
// gathers bind (docs/zero.md, "One rank"); stages 1-2 have the kernel write the model's weights.
// Either way the 16-bit weights follow the fp32 master after every step, GatheredParameters
// without a modifier rank still drops changes, and with one they reach the master and the copy.
TEST(Zero, OneRankWritesThe16BitWeightsInPlaceAndGatheredParametersStillCopies) {
  const std::string bf16 = R"(, "bf16": {"enabled": true}})";
  for (int stage : {1, 2, 3}) {
    std::string json = config_json(stage, 4, 1);
    json = json.substr(0, json.size() - 1) + bf16;  // bf16 beside zero_optimization
    Engine engine(tiny_model(ModelKind::kGpt2), resolved_config(json));
    for (double loss : train(engine, 0, 3)) EXPECT_TRUE(std::isfinite(loss)) << "stage " << stage;
    const auto& zero = engine.zero();
    const torch::Tensor copy = engine.zero().kernel_weight_copy();
    ASSERT_TRUE(copy.defined()) << "stage " << stage;
    EXPECT_EQ(copy.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(copy.narrow(0, 0, zero.layout().shard_numel()),
                             engine.master_weights().to(torch::kBFloat16)))
        << "stage " << stage << ": the 16-bit weights are not the master's rounding after the step";
    const auto& slot = zero.slots().front();
    {
      GatheredParameters gathered(engine);
      torch::NoGradGuard no_grad;
      slot.param.fill_(7.0);
    }
    {
      GatheredParameters check(engine);
      if (stage == 3) {
        EXPECT_FALSE(torch::allclose(slot.param, torch::full_like(slot.param, 7.0)))
            << "a change without a modifier rank was kept at stage 3";
      }
    }
    {
      GatheredParameters gathered(engine, /*modifier_rank=*/0);
      torch::NoGradGuard no_grad;
      slot.param.fill_(0.25);
    }
    GatheredParameters check(engine);
    EXPECT_TRUE(torch::allclose(slot.param, torch::full_like(slot.param, 0.25))) << "stage " << stage;
    EXPECT_TRUE(torch::allclose(engine.master_weights().narrow(0, 0, slot.numel), torch::full({slot.numel}, 0.25)))
        << "stage " << stage << ": the modified weights did not reach the master";
  }
}

TEST(Zero, InitializeReturnsTheDataLoaderOfThisRank) {
  auto list = models(2, ModelKind::kMlp);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    RegressionOptions data;
    data.num_samples = 64;
    EngineOptions options;
    options.communicator = comm;
    auto result = initialize(list[rank], resolved_config(config_json(1, 4, 1)), options,
                             std::make_shared<RegressionDataset>(data));
    ASSERT_TRUE(result.training_dataloader);
    EXPECT_EQ(result.training_dataloader->next().size(), 4);
    EXPECT_EQ(result.training_dataloader->sampler().samples_per_rank(), 32);
    EXPECT_EQ(result.optimizer, &result.engine->optimizer());
    EXPECT_EQ(result.lr_scheduler, &result.engine->lr_scheduler());
    EXPECT_EQ(result.engine->rank(), rank);
  });
}

// zero.Init's counterpart: each rank builds the model partitioned, so no rank ever holds more than
// one layer whole, and training matches one rank that built the model whole from the same seed.
TEST(Zero, PartitionedConstructionNeverHoldsTheWholeModel) {
  const auto reference = single_rank_losses(10);
  std::mutex build;
  std::vector<double> losses;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<TrainableModel> model;
    std::int64_t peak = 0, partitioned = 0;
    {
      std::lock_guard<std::mutex> lock(build);  // torch's default generator is global
      PartitionedInit init(rank, 2, torch::kFloat32, torch::kCPU);
      model = tiny_model(ModelKind::kGpt2);
      peak = init.peak_whole_numel();
      partitioned = init.partitioned_numel();
    }
    for (const auto& p : model->parameters()) EXPECT_EQ(p.numel(), 0) << "a whole parameter after construction";
    EXPECT_GT(partitioned, 0);
    EXPECT_LT(peak, partitioned / 2) << "more than one layer was whole at once";
    EngineOptions options;
    options.communicator = comm;
    Engine engine(model, resolved_config(config_json(3, kGlobalBatch / 2, 1)), options);
    EXPECT_EQ(engine.parameter_count(), partitioned);
    auto l = train(engine, 0, 10);
    if (rank == 0) losses = l;
  });
  expect_close(losses, reference, "partitioned construction");
}

TEST(Zero, NoSyncIsRefusedWhereGradientsArePartitioned) {
  auto list = models(1);
  Engine engine(list[0], resolved_config(config_json(2, 8, 1)));
  EXPECT_THROW(engine.no_sync(), std::logic_error);
}

// A checkpoint written by 2 ranks at stage 2 resumes on 1 rank (stage 0) and on 4 ranks (stage 3)
// with the losses the 2-rank run goes on to have.
TEST(Zero, CheckpointOfTwoRanksResumesOnOneAndOnFour) {
  test::TempDir dir;
  auto list = models(2);
  std::vector<double> continued;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    Engine engine(list[rank], resolved_config(config_json(2, 4, 1)), options);
    train(engine, 0, 5);
    engine.save_checkpoint(dir.file("ckpt"), std::nullopt, R"({"note": "five"})");
    auto l = train(engine, 5, 5);
    if (rank == 0) continued = l;
  });
  {
    Engine one(tiny_model(ModelKind::kGpt2, 99), resolved_config(config_json(0, 8, 1)));
    EXPECT_EQ(one.load_checkpoint(dir.file("ckpt")), R"({"note": "five"})");
    EXPECT_EQ(one.global_steps(), 5);
    expect_close(train(one, 5, 5), continued, "resumed on 1 rank");
  }
  auto four = models(4);
  std::vector<double> resumed;
  run_ranks(4, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    Engine engine(four[rank], resolved_config(config_json(3, 2, 1)), options);
    engine.load_checkpoint(dir.file("ckpt"));
    auto l = train(engine, 5, 5);
    if (rank == 0) resumed = l;
  });
  expect_close(resumed, continued, "resumed on 4 ranks at stage 3");

  // The saved world size and stage again: each rank reads its own optimizer file only.
  const auto folder = std::filesystem::path(dir.file("ckpt")) / "global_step5";
  auto two = models(2);
  std::vector<double> same;
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    EngineOptions options;
    options.communicator = comm;
    options.log = [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(lines_mutex);
      lines.push_back(line);
    };
    Engine engine(two[rank], resolved_config(config_json(2, 4, 1)), options);
    engine.load_checkpoint(dir.file("ckpt"));
    auto l = train(engine, 5, 5);
    if (rank == 0) same = l;
  });
  expect_close(same, continued, "resumed on 2 ranks at stage 2");
  int loaded = 0;
  for (const auto& line : lines)
    if (line.find("Loaded checkpoint") != std::string::npos) {
      ++loaded;
      EXPECT_EQ(line.find("resharded"), std::string::npos) << line;
    }
  EXPECT_EQ(loaded, 2) << "one load line per rank";
  {
    // Rank 1's file damaged: the tag no longer matches its manifest, and the load names the file
    // before any rank uses a byte of it.
    const auto rank1 = folder / checkpoints::optim_states_file_name(/*bf16=*/false, 1);
    ASSERT_TRUE(std::filesystem::exists(rank1));
    std::ofstream(rank1, std::ios::trunc) << "not a pickle";
    Engine one(tiny_model(ModelKind::kGpt2, 99), resolved_config(config_json(0, 8, 1)));
    try {
      one.load_checkpoint(dir.file("ckpt"));
      ADD_FAILURE() << "a damaged checkpoint was loaded";
    } catch (const checkpoints::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("zero_pp_rank_1_mp_rank_00_optim_states.pt: does not belong to this save"),
                std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace shardscope::engine
