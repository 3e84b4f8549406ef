// ZeRO model-state arithmetic, checked against the ZeRO paper's per-GPU rules worked by hand:
// 7B parameters, mixed-precision Adam (16 B/param), 8 GPUs.
#include <gtest/gtest.h>

#include "estimator/deepspeed_formulas.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/model_states.hpp"

namespace shardscope::estimator {
namespace {

constexpr double k7B = 7e9;

ClusterSettings cluster(int gpus, int nodes = 1) {
  ClusterSettings c;
  c.gpus_per_node = gpus;
  c.nodes = nodes;
  return c;
}

ModelStatesEstimate states(int stage, int gpus, OffloadDevice opt = OffloadDevice::kNone,
                           OffloadDevice param = OffloadDevice::kNone, PrecisionSettings p = {}, int nodes = 1) {
  return estimate_model_states(k7B, ZeroPlan{stage, opt, param}, p, cluster(gpus, nodes));
}

TEST(ModelStates, SevenBillionOnEightGpus) {
  EXPECT_DOUBLE_EQ(states(0, 8).gpu.total(), 112e9);  // 16 B x 7e9, replicated
  EXPECT_DOUBLE_EQ(states(1, 8).gpu.total(), 38.5e9);  // (4 + 12/8) x 7e9
  EXPECT_DOUBLE_EQ(states(2, 8).gpu.total(), 26.25e9);  // (2 + 14/8) x 7e9
  EXPECT_DOUBLE_EQ(states(3, 8).gpu.total(), 14e9);  // 16/8 x 7e9
  EXPECT_EQ(states(1, 8).gpu_rule, "4 + 12/N B/param");
  EXPECT_EQ(states(2, 8).gpu_rule, "2 + 14/N B/param");
  EXPECT_EQ(states(3, 8).gpu_rule, "16/N B/param");
  EXPECT_EQ(states(0, 8).gpu_rule, "16 B/param");
}

TEST(ModelStates, PartsStaySeparate) {
  const auto s = states(2, 8);
  EXPECT_DOUBLE_EQ(s.gpu.params.bytes, 14e9);            // 2 B, replicated
  EXPECT_DOUBLE_EQ(s.gpu.gradients.bytes, 14e9 / 8);     // 2 B / N
  EXPECT_DOUBLE_EQ(s.gpu.master_params.bytes, 28e9 / 8); // 4 B / N
  EXPECT_DOUBLE_EQ(s.gpu.optimizer_states.bytes, 56e9 / 8);  // 8 B / N
  EXPECT_NE(s.gpu.optimizer_states.formula.find("8 B/param x P / N"), std::string::npos) << s.gpu.optimizer_states.formula;
  EXPECT_EQ(s.cpu_per_node.total(), 0);
}

TEST(ModelStates, PrecisionVariants) {
  PrecisionSettings fp32;
  fp32.precision = Precision::kFp32;
  const auto b32 = state_bytes_per_param(fp32);
  EXPECT_EQ(b32.params, 4);
  EXPECT_EQ(b32.master, 0);  // fp32 updates the weights themselves
  EXPECT_EQ(b32.total(), 16);
  EXPECT_EQ(states(1, 8, OffloadDevice::kNone, OffloadDevice::kNone, fp32).gpu_rule, "8 + 8/N B/param");

  PrecisionSettings low;
  low.low_precision_master = true;
  EXPECT_EQ(state_bytes_per_param(low).total(), 2 + 2 + 2 + 8);
  low.low_precision_optimizer_states = true;
  EXPECT_EQ(state_bytes_per_param(low).total(), 2 + 2 + 2 + 4);

  PrecisionSettings sgd;
  sgd.optimizer_states_per_param = 1;
  EXPECT_EQ(state_bytes_per_param(sgd).total(), 12);
}

TEST(ModelStates, OptimizerOffloadMatchesDeepSpeedsZeroInitCpuTerm) {
  // Stage 3, optimizer on CPU: the node holds 4 B master + 8 B moments + 4 B fp32 grads per
  // parameter of its share: 16 P / nodes, which is DeepSpeed's zero_init CPU term before x1.5.
  const auto s = states(3, 8, OffloadDevice::kCpu, OffloadDevice::kNone, {}, 2);
  EXPECT_DOUBLE_EQ(s.cpu_per_node.total(), 16 * k7B / 2);
  EXPECT_DOUBLE_EQ(s.gpu.total(), 2 * k7B / 16);
  const auto ds = deepspeed_zero3_row(k7B, 0, 8, 2, true, false, true, 1.0);
  EXPECT_DOUBLE_EQ(s.cpu_per_node.total(), ds.cpu_bytes);
  EXPECT_DOUBLE_EQ(s.gpu.total(), ds.gpu_bytes);
  // With parameters offloaded too: 18 P / nodes on the CPU, nothing persistent on the GPU.
  const auto both = states(3, 8, OffloadDevice::kCpu, OffloadDevice::kCpu, {}, 2);
  EXPECT_DOUBLE_EQ(both.cpu_per_node.total(), deepspeed_zero3_row(k7B, 0, 8, 2, true, true, true, 1.0).cpu_bytes);
  EXPECT_EQ(both.gpu.total(), 0);
}

TEST(ModelStates, Stage1And2WithOptimizerOffload) {
  const auto s1 = states(1, 8, OffloadDevice::kCpu);
  EXPECT_DOUBLE_EQ(s1.gpu.total(), 4 * k7B);  // 16-bit params and full gradients stay
  const auto s2 = states(2, 8, OffloadDevice::kCpu);
  EXPECT_DOUBLE_EQ(s2.gpu.total(), 2 * k7B);  // DeepSpeed's estimate_zero2 offload row: 2P
  EXPECT_DOUBLE_EQ(s2.cpu_per_node.total(), 16 * k7B);
}

TEST(ModelStates, NvmeHoldsOptimizerStates) {
  const auto s = states(3, 8, OffloadDevice::kNvme, OffloadDevice::kNvme);
  // 2 B params + 4 B fp32 gradients + 4 B master + 8 B moments, all swapped to NVMe.
  EXPECT_DOUBLE_EQ(s.nvme_per_node.total(), (2 + 4 + 4 + 8) * k7B);
  EXPECT_EQ(s.cpu_per_node.total(), 0);
  EXPECT_EQ(s.gpu.total(), 0);
}

TEST(ModelStates, InvalidPlansAreRejected) {
  EXPECT_THROW(states(2, 8, OffloadDevice::kCpu, OffloadDevice::kCpu), EstimatorError);
  EXPECT_THROW(states(2, 8, OffloadDevice::kNvme), EstimatorError);
  EXPECT_THROW(states(0, 8, OffloadDevice::kCpu), EstimatorError);
  EXPECT_THROW(states(4, 8), EstimatorError);
}

}  // namespace
}  // namespace shardscope::estimator
