// Buffers from bucket element counts, and communication volume per step, by hand.
#include <gtest/gtest.h>

#include "estimator/buffers.hpp"
#include "estimator/communication.hpp"

namespace shardscope::estimator {
namespace {

using D = OffloadDevice;

EstimateOptions options_for(int gpus) {
  EstimateOptions o;
  o.cluster.gpus_per_node = gpus;
  return o;
}

double counted_gpu(const BufferEstimate& b) {
  double sum = 0;
  for (const auto& item : b.items)
    if (item.counted && item.on_gpu) sum += item.bytes;
  return sum;
}

TEST(Buffers, ReduceBucketsPerStage) {
  const ModelDescription model = describe_param_count(7e9, 5e8);
  const EstimateOptions o = options_for(8);
  // Stage 0: min(5e8, P) elements x 2 B.
  EXPECT_DOUBLE_EQ(estimate_buffers(model, {0, D::kNone, D::kNone}, o).gpu_bytes, 1e9);
  // Stage 1-2: overlap_comm defaults to false below stage 3: one bucket of 5e8 x 2 B.
  EXPECT_DOUBLE_EQ(estimate_buffers(model, {2, D::kNone, D::kNone}, o).gpu_bytes, 1e9);
  EstimateOptions overlap = o;
  overlap.buckets.overlap_comm = true;
  EXPECT_DOUBLE_EQ(estimate_buffers(model, {2, D::kNone, D::kNone}, overlap).gpu_bytes, 2e9);
  overlap.buckets.reduce_bucket_size = 2e8;
  EXPECT_DOUBLE_EQ(estimate_buffers(model, {1, D::kNone, D::kNone}, overlap).gpu_bytes, 8e8);
}

TEST(Buffers, Stage3WorkingSet) {
  const ModelDescription model = describe_param_count(7e9, 1.31e8);
  const EstimateOptions o = options_for(8);
  const BufferEstimate b = estimate_buffers(model, {3, D::kNone, D::kNone}, o);
  // reduce bucket 5e8 x 2 + gathered min(P, L + 5e7, max(L, 1e9)) x 2 + L x 2 (grads).
  const double gathered = 1.31e8 + 5e7;
  EXPECT_DOUBLE_EQ(b.gpu_bytes, 1e9 + gathered * 2 + 1.31e8 * 2);
  EXPECT_DOUBLE_EQ(counted_gpu(b), b.gpu_bytes);
  // max_live_parameters caps the prefetch, but a layer is always gathered whole.
  EstimateOptions capped = o;
  capped.buckets.max_live_parameters = 1e6;
  const BufferEstimate c = estimate_buffers(model, {3, D::kNone, D::kNone}, capped);
  EXPECT_DOUBLE_EQ(c.gpu_bytes, 1e9 + 1.31e8 * 2 + 1.31e8 * 2);
}

TEST(Buffers, NvmeSwapBuffersArePinnedHostMemory) {
  const ModelDescription model = describe_param_count(8e9, 1e8);
  const BufferEstimate b = estimate_buffers(model, {3, D::kNvme, D::kNvme}, options_for(8));
  // params: 5 x 1e8 x 2 B x 8 ranks; optimizer: 4 x min(1e9, 8e9/8) x 4 B x 8 ranks.
  EXPECT_DOUBLE_EQ(b.cpu_bytes_per_node, 5 * 1e8 * 2 * 8 + 4 * 1e9 * 4 * 8);
}

TEST(Buffers, HigherStageCanNeedMoreOnSmallModels) {
  // DeepSpeed issue #6936: a 125M model on 8 GPUs. Stage 0 buckets are capped by the model;
  // stage 2 with overlap_comm allocates 2 x 5e8 elements whatever the model size.
  const ModelDescription model = describe_param_count(125e6, 4e7);
  EstimateOptions o = options_for(8);
  o.buckets.overlap_comm = true;
  const double stage0 = 16 * 125e6 + estimate_buffers(model, {0, D::kNone, D::kNone}, o).gpu_bytes;
  const double stage2 = (2 + 14.0 / 8) * 125e6 + estimate_buffers(model, {2, D::kNone, D::kNone}, o).gpu_bytes;
  EXPECT_GT(stage2, stage0);
}

TEST(Communication, RingVolumesPerStage) {
  EstimateOptions o = options_for(8);
  const double psi = 7e9 * 2;  // bf16 bytes
  const double ring = 7.0 / 8;
  EXPECT_DOUBLE_EQ(estimate_communication(7e9, {0, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 2 * ring * psi);
  EXPECT_DOUBLE_EQ(estimate_communication(7e9, {1, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 2 * ring * psi);
  EXPECT_DOUBLE_EQ(estimate_communication(7e9, {2, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 2 * ring * psi);
  const auto s3 = estimate_communication(7e9, {3, D::kNone, D::kNone}, o, 100e9, "test");
  EXPECT_DOUBLE_EQ(s3.bytes_per_gpu, 3 * ring * psi);
  ASSERT_TRUE(s3.seconds_per_step.has_value());
  EXPECT_DOUBLE_EQ(*s3.seconds_per_step, 3 * ring * psi / 100e9);
  EXPECT_EQ(s3.collectives.size(), 3u);
}

TEST(Communication, GradientAccumulation) {
  EstimateOptions o = options_for(4);
  o.workload.grad_accum = 4;
  const double unit = 0.75 * 2e9;  // (n-1)/n x 1e9 params x 2 B
  EXPECT_DOUBLE_EQ(estimate_communication(1e9, {1, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 2 * unit);
  EXPECT_DOUBLE_EQ(estimate_communication(1e9, {2, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 5 * unit);
  EXPECT_DOUBLE_EQ(estimate_communication(1e9, {3, D::kNone, D::kNone}, o, std::nullopt, "").bytes_per_gpu, 12 * unit);
}

TEST(Communication, SingleGpuMovesNothing) {
  const auto c = estimate_communication(1e9, {3, D::kNone, D::kNone}, options_for(1), 1e9, "x");
  EXPECT_EQ(c.bytes_per_gpu, 0);
  EXPECT_TRUE(c.collectives.empty());
}

}  // namespace
}  // namespace shardscope::estimator
