#include "profiler/comm_bandwidth.hpp"

#include <gtest/gtest.h>

namespace shardscope::profiler {
namespace {

TEST(CommBandwidth, AllReduceMatchesNcclTestsConvention) {
  // 1 GB all-reduced over 8 ranks in 10 ms: algbw = 2*size/t, busbw = size/t * 2*7/8.
  const auto bw = collective_bandwidth(CollectiveOp::kAllReduce, 1'000'000'000, 8, 10.0);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 2.0 * 1e9 / 10.0 * 8 / 1e6);  // 1600 Gbps
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 1e9 / 10.0 * 1.75 * 8 / 1e6);  // 1400 Gbps
}

TEST(CommBandwidth, GathersScaleTheShardByWorldSize) {
  // A 100 MB shard per rank all-gathered over 4 ranks in 4 ms moves 400 MB.
  const auto bw = collective_bandwidth(CollectiveOp::kAllGather, 100'000'000, 4, 4.0);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 400e6 / 4.0 * 8 / 1e6);        // 800 Gbps
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 400e6 / 4.0 * 0.75 * 8 / 1e6);  // 600 Gbps
  const auto rs = collective_bandwidth(CollectiveOp::kReduceScatter, 100'000'000, 4, 4.0);
  EXPECT_DOUBLE_EQ(rs.busbw_gbps, bw.busbw_gbps);
}

TEST(CommBandwidth, PointToPointBusEqualsAlgorithmBandwidth) {
  const auto bw = collective_bandwidth(CollectiveOp::kBroadcast, 1'000'000, 16, 1.0);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 8.0);
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, bw.algbw_gbps);
}

TEST(CommBandwidth, FactorsAndEdgeCases) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(collective_bandwidth(CollectiveOp::kBarrier, 0, 8, 0.5).algbw_gbps, 0.0);
  EXPECT_DOUBLE_EQ(collective_bandwidth(CollectiveOp::kAllReduce, 1000, 8, 0.0).busbw_gbps, 0.0);
  EXPECT_THROW(collective_bandwidth(CollectiveOp::kAllReduce, 1, 0, 1.0), std::invalid_argument);
}

TEST(CommBandwidth, NamesRoundTrip) {
  EXPECT_EQ(collective_from_name("all_gather_into_tensor"), CollectiveOp::kAllGather);
  EXPECT_EQ(collective_from_name("reduce_scatter_tensor"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(collective_from_name("allreduce"), std::nullopt);
  EXPECT_STREQ(collective_name(CollectiveOp::kAllGather), "all_gather");
  EXPECT_STREQ(collective_name(CollectiveOp::kSend), "send");
}

}  // namespace
}  // namespace shardscope::profiler
