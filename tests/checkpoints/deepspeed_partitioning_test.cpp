// DeepSpeed's partitioning: every parameter element lands in exactly one rank's partition, at
// the place DeepSpeed puts it (stage_1_and_2.py / stage3.py arithmetic), and 16-bit casts round
// to nearest even.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "checkpoints/deepspeed_partitioning.hpp"
#include "checkpoints/host_tensor.hpp"

namespace shardscope::checkpoints {
namespace {

std::vector<ParameterEntry> params(const std::vector<std::int64_t>& numels) {
  std::vector<ParameterEntry> out;
  for (std::size_t i = 0; i < numels.size(); ++i) out.push_back({"p" + std::to_string(i), {numels[i]}, 0, 0});
  assign_offsets(out, "test");
  return out;
}

// Each canonical element covered once over all ranks, no part slot used twice.
void expect_exact_cover(const std::vector<std::vector<PartitionRun>>& per_rank, std::int64_t total, std::int64_t part) {
  std::vector<int> covered(static_cast<std::size_t>(total), 0);
  for (const auto& runs : per_rank) {
    std::vector<int> used(static_cast<std::size_t>(part), 0);
    for (const auto& r : runs)
      for (std::int64_t i = 0; i < r.count; ++i) {
        ++covered[static_cast<std::size_t>(r.canonical + i)];
        ASSERT_LT(r.part + i, part);
        EXPECT_EQ(++used[static_cast<std::size_t>(r.part + i)], 1);
      }
  }
  for (std::int64_t i = 0; i < total; ++i) EXPECT_EQ(covered[static_cast<std::size_t>(i)], 1) << "element " << i;
}

TEST(DeepSpeedPartitioning, Zero12PadsToTwiceTheWorldSizeAndCutsEqualPartitions) {
  const auto p = params({7, 100, 3});  // 110 elements
  Zero12Group all{{0, 1, 2}, {}};
  for (int world : {1, 2, 3, 4, 7}) {
    const std::int64_t partition = zero12_partition_numel(110, world);
    EXPECT_EQ(partition * world % (2 * world), 0);
    EXPECT_GE(partition * world, 110);
    EXPECT_LT(partition * world, 110 + 2 * world);
    std::vector<std::vector<PartitionRun>> runs;
    for (int r = 0; r < world; ++r) runs.push_back(zero12_runs(p, all, world, r, 0, partition));
    expect_exact_cover(runs, 110, partition);
    // Only the last rank is padded, as DeepSpeed strips it from the saved fp32 partition.
    for (int r = 0; r + 1 < world; ++r) EXPECT_EQ(zero12_group_padding(110, world, r), 0);
    EXPECT_EQ(zero12_group_padding(110, world, world - 1), partition * world - 110);
  }
  EXPECT_EQ(zero12_partition_numel(110, 4), 28);  // 110 -> 112 = 4 x 28
}

TEST(DeepSpeedPartitioning, Zero3SplitsEveryParameterOnItsOwn) {
  const auto p = params({5, 8, 1});
  EXPECT_EQ(zero3_partition_numel(5, 2), 3);
  const auto rank1 = zero3_runs(p, 2, 1);
  // rank 1 holds p0[3..5), then p1[4..8) after p0's 3-element chunk, and nothing of p2.
  ASSERT_EQ(rank1.size(), 2u);
  EXPECT_EQ(rank1[0].canonical, 3);
  EXPECT_EQ(rank1[0].part, 0);
  EXPECT_EQ(rank1[0].count, 2);
  EXPECT_EQ(rank1[1].canonical, 5 + 4);
  EXPECT_EQ(rank1[1].part, 3);
  EXPECT_EQ(rank1[1].count, 4);
  for (int world : {1, 2, 3, 5}) {
    std::int64_t part = 0;
    for (const auto& e : p) part += zero3_partition_numel(e.numel, world);
    std::vector<std::vector<PartitionRun>> runs;
    for (int r = 0; r < world; ++r) runs.push_back(zero3_runs(p, world, r));
    expect_exact_cover(runs, 14, part);
  }
}

TEST(DeepSpeedPartitioning, Zero3SubGroupsCloseAtTheSubGroupSize) {
  const auto p = params({10, 10, 10, 10});
  EXPECT_EQ(zero3_sub_groups(p, 2, 1'000'000'000).size(), 1u);  // the default: one group
  const auto groups = zero3_sub_groups(p, 2, 10);                 // partitions of 5: close after two
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], std::make_pair(0, 2));
  EXPECT_EQ(groups[1], std::make_pair(2, 4));
}

TEST(DeepSpeedPartitioning, FileNamesParse) {
  EXPECT_EQ(optim_states_file_name(true, 3), "bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt");
  const auto f = parse_checkpoint_file_name("bf16_zero_pp_rank_12_mp_rank_00_optim_states.pt");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->dp_rank, 12);
  EXPECT_TRUE(f->bf16);
  EXPECT_EQ(parse_checkpoint_file_name("zero_pp_rank_1_mp_rank_00_model_states.pt")->kind,
            CheckpointFileName::Kind::kZeroModelStates);
  EXPECT_FALSE(parse_checkpoint_file_name("zero_pp_rank_1_mp_rank_00_optim_states.pt.tmp.42"));
  EXPECT_FALSE(parse_checkpoint_file_name("zero_to_fp32.py"));
}

TEST(HostTensor, SixteenBitCastsRoundToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3F80);   // halfway (1 + 2^-8): to even
  EXPECT_EQ(float_to_bf16(1.01171875f), 0x3F82);   // halfway (1 + 3 x 2^-8): to even, up
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);      // the largest fp16
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);      // rounds to inf
  EXPECT_EQ(float_to_fp16(5.960464477539063e-08f), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_fp16(2.98023223876953125e-08f), 0x0000);  // half of it: to even (zero)
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t h = 0; h < 0x7C00; ++h)  // every finite positive fp16 survives the round trip
    ASSERT_EQ(float_to_fp16(fp16_to_float(static_cast<std::uint16_t>(h))), h) << h;
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

TEST(HostTensor, ShapesThatOverflowAreRefused) {
  EXPECT_FALSE(checked_numel({1LL << 40, 1LL << 40}));
  EXPECT_FALSE(checked_numel({-1, 4}));
  EXPECT_EQ(checked_numel({}).value(), 1);
  std::vector<ParameterEntry> p{{"huge", {1LL << 62, 4}, 0, 0}};
  EXPECT_ANY_THROW(assign_offsets(p, "test"));
}

}  // namespace
}  // namespace shardscope::checkpoints
