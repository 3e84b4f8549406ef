// The placement plan: where each piece of model state lives for the configs users write, the
// partial-offload split, DeepSpeed's stage 1-2 reading of "nvme", and its assertion texts.
#include <gtest/gtest.h>

#include "engine/placement/placement_plan.hpp"
#include "tests/engine/engine_test_support.hpp"

namespace shardscope::engine {
namespace {

PlacementPlan plan(int stage, const std::string& offload, bool cuda = true) {
  return plan_placement(testing::resolved_config(R"({"train_micro_batch_size_per_gpu": 2,
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
      "zero_optimization": {"stage": )" + std::to_string(stage) +
                                                 (offload.empty() ? "" : ", " + offload) + "}}"),
                        cuda);
}

TEST(PlacementPlan, WithoutOffloadEverythingStaysOnTheDevice) {
  for (int stage : {0, 1, 2, 3}) {
    const auto p = plan(stage, "");
    EXPECT_EQ(p.param_shard, Tier::kDevice);
    EXPECT_EQ(p.optimizer, Tier::kDevice);
    EXPECT_FALSE(p.separate_shard()) << "stage " << stage << ": the gathers cast the fp32 master";
    EXPECT_EQ(p.first_offloaded_group(10), 10);
  }
}

TEST(PlacementPlan, CpuAndNvmeTiersAtStage3) {
  const auto cpu = plan(3, R"("offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"})");
  EXPECT_EQ(cpu.optimizer, Tier::kHost);
  EXPECT_EQ(cpu.param_shard, Tier::kHost);
  EXPECT_TRUE(cpu.separate_shard());
  EXPECT_FALSE(cpu.optimizer_swap);
  const auto nvme = plan(3, R"("sub_group_size": 1e8,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "pipeline_read": true, "buffer_count": 8},
      "offload_param": {"device": "nvme", "nvme_path": "/nvme2", "buffer_count": 6, "buffer_size": 1e7, "max_in_cpu": 0})");
  EXPECT_EQ(nvme.optimizer, Tier::kNvme);
  EXPECT_EQ(nvme.param_shard, Tier::kNvme);
  ASSERT_TRUE(nvme.optimizer_swap);
  EXPECT_EQ(nvme.optimizer_swap->nvme_path, "/nvme");
  EXPECT_EQ(nvme.optimizer_swap->buffer_count, 8);
  EXPECT_TRUE(nvme.optimizer_swap->pipeline_read);
  EXPECT_FALSE(nvme.optimizer_swap->pipeline_write);
  EXPECT_EQ(nvme.optimizer_swap->sub_group_size, 100000000);
  ASSERT_TRUE(nvme.param_swap);
  EXPECT_EQ(nvme.param_swap->nvme_path, "/nvme2");
  EXPECT_EQ(nvme.param_swap->buffer_count, 6);
  EXPECT_EQ(nvme.param_swap->buffer_size, 10000000);
  EXPECT_EQ(nvme.param_swap->max_in_cpu, 0);
  EXPECT_EQ(nvme.aio.block_size, 1048576) << "the aio block's default";
}

TEST(PlacementPlan, NvmeBelowStage3RunsAsCpuOffloadAndSaysSo) {
  const auto p = plan(2, R"("offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"})");
  EXPECT_EQ(p.optimizer, Tier::kHost);
  EXPECT_FALSE(p.optimizer_swap);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("runs as CPU offload"), std::string::npos) << p.notes[0];
  // offload_param below stage 3 is ignored, as DeepSpeed does.
  EXPECT_EQ(plan(2, R"("offload_param": {"device": "cpu"})").param_shard, Tier::kDevice);
}

TEST(PlacementPlan, PartialRatioKeepsTheFirstGroupsOnTheDevice) {
  const auto p = plan(3, R"("offload_optimizer": {"device": "cpu", "ratio": 0.3})");
  EXPECT_DOUBLE_EQ(p.offload_ratio, 0.3);
  // DeepSpeed: sub-group i goes to the CPU when i >= int((1 - ratio) * count).
  EXPECT_EQ(p.first_offloaded_group(10), 7);
  EXPECT_EQ(p.first_offloaded_group(3), 2);
  EXPECT_EQ(plan(3, R"("offload_optimizer": {"device": "cpu"})").first_offloaded_group(10), 0);
}

TEST(PlacementPlan, PinningIsTheConfigsOnAGpuOnly) {
  const auto p = plan(3, R"("offload_optimizer": {"device": "cpu", "pin_memory": false}, "offload_param": {"device": "cpu"})");
  EXPECT_FALSE(p.pin_optimizer);
  EXPECT_TRUE(p.pin_params);
  EXPECT_TRUE(p.cuda);
  EXPECT_FALSE(plan(3, "", /*cuda=*/false).cuda);
}

}  // namespace
}  // namespace shardscope::engine
