// The verdict along the ladder, and the whole estimate's JSON, on cases worked by hand.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "estimator/estimate.hpp"
#include "estimator/estimate_report.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

using D = OffloadDevice;

EstimateOptions eight_gpus(double gib) {
  EstimateOptions o;
  o.cluster.gpus_per_node = 8;
  o.cluster.gpu_memory_bytes = gib * kGiB;
  return o;
}

const PlanEstimate& plan(const Estimate& e, ZeroPlan p) {
  for (const auto& x : e.plans)
    if (x.plan == p) return x;
  throw std::runtime_error("plan not found");
}

TEST(Verdict, LadderOrder) {
  const auto& ladder = ladder_plans();
  ASSERT_GE(ladder.size(), 8u);
  for (int stage = 0; stage < 4; ++stage) EXPECT_EQ(ladder[static_cast<std::size_t>(stage)], (ZeroPlan{stage, D::kNone, D::kNone}));
  // Offload only after every stage without it.
  for (std::size_t i = 4; i < ladder.size(); ++i) EXPECT_NE(ladder[i].offload_optimizer, D::kNone);
}

TEST(Verdict, SevenBillionOnEightyGiB) {
  // Stage 0: 112e9 + 1e9 bucket > 72 GiB usable; stage 1's step, 38.5e9 + the fp32 gradients of the
  // shard (4 x 7e9 / 8) + 1e9 bucket + cuBLAS's 64 MiB, is under its start: the fp32 model built
  // whole with the flat 16-bit weights and gradients beside it, 8 x 7e9 (x 1.09 + the context: fits).
  const Estimate e = run_estimate(describe_param_count(7e9, 1.31e8), eight_gpus(80));
  ASSERT_TRUE(e.verdict.recommended.has_value());
  EXPECT_EQ(*e.verdict.recommended, (ZeroPlan{1, D::kNone, D::kNone}));
  EXPECT_DOUBLE_EQ(plan(e, {1, D::kNone, D::kNone}).peak.layer_phase_bytes, 38.5e9 + 3.5e9 + 1e9 + kCublasWorkspaceBytes);
  EXPECT_DOUBLE_EQ(plan(e, {1, D::kNone, D::kNone}).gpu_total_bytes, 8 * 7e9);
  EXPECT_NE(e.verdict.summary.find("headroom"), std::string::npos) << e.verdict.summary;
  EXPECT_FALSE(*plan(e, {0, D::kNone, D::kNone}).fits_gpu);
  EXPECT_DOUBLE_EQ(e.verdict.usable_gpu_bytes, 72 * kGiB);
  EXPECT_NE(e.verdict.summary.find("ZeRO stage 1 without offload"), std::string::npos) << e.verdict.summary;
  ASSERT_FALSE(e.verdict.advice.empty());
  EXPECT_NE(e.verdict.advice[0].find("stage 0"), std::string::npos);
}

TEST(Verdict, OffloadOnlyWhenNothingElseFits) {
  // 7B on 8 x 16 GiB: usable 14.4 GiB = 15.46e9; stage 3 resident 14 x 7e9 / 8 = 12.25e9 + 1e9 bucket
  // + 2 x (1.31e8 + 5e7) gathered + 2 x 1.31e8 layer grads = 13.87e9, x 1.09 + the context: no.
  // Stage 2 with optimizer offload keeps the 16-bit weights and their partition's gradients,
  // 2 x 7e9 + 2 x 7e9 / 8 = 15.75e9: no. Stage 3 with it: 2 x 7e9 / 8 twice + buffers: yes.
  EstimateOptions o = eight_gpus(16);
  const Estimate e = run_estimate(describe_param_count(7e9, 1.31e8), o);
  EXPECT_FALSE(*plan(e, {3, D::kNone, D::kNone}).fits_gpu);
  ASSERT_TRUE(e.verdict.recommended.has_value());
  EXPECT_FALSE(*plan(e, {2, D::kCpu, D::kNone}).fits_gpu);
  EXPECT_EQ(*e.verdict.recommended, (ZeroPlan{3, D::kCpu, D::kNone}));
  // Without --cpu-mem the host memory is not judged, but the advice names what it needs.
  bool mentions_host = false;
  for (const auto& line : e.verdict.advice) mentions_host = mentions_host || line.find("host memory") != std::string::npos;
  EXPECT_TRUE(mentions_host);
}

TEST(Verdict, CpuMemoryDecidesOffload) {
  EstimateOptions o = eight_gpus(16);
  // Per rank (8 on the node, 8.75e8 elements each), as the engine pins them in power-of-two blocks:
  // stage 2 + CPU optimizer holds fp32 gradients and master (4 GiB blocks each), the moments (7e9 B
  // pageable) and the 16-bit copy (2 GiB): ~17.4 GiB, 139 GiB per node. NVMe optimizer + CPU
  // parameters: the gradients (4 GiB), 4 swap buffers of 1e8 fp32 (512 MiB blocks), a 16-bit staging
  // buffer and the 16-bit parameter shard (2 GiB): ~9.1 GiB, 73 GiB per node.
  o.cluster.cpu_memory_bytes = 96 * kGiB;
  o.buckets.sub_group_size = 1e8;
  const Estimate e = run_estimate(describe_param_count(7e9, 1.31e8), o);
  EXPECT_FALSE(*plan(e, {2, D::kCpu, D::kNone}).fits_cpu);
  ASSERT_TRUE(e.verdict.recommended.has_value());
  EXPECT_EQ(e.verdict.recommended->offload_optimizer, D::kNvme);
}

TEST(Verdict, NothingFitsGivesActionableAdvice) {
  TransformerShape s = default_shape(TransformerLayout::kLlama);
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.ffn = 11008;
  s.vocab = 32000;
  s.seq_len = 4096;
  // Micro-batch 4 at 4096 tokens keeps ~93 GiB of activations per GPU without checkpointing (fused
  // attention); with full checkpointing ~6 GiB, and stage 1 (37e9 of states) then fits in 72 GiB.
  EstimateOptions o = eight_gpus(80);
  o.workload.micro_batch = 4;
  o.cluster.cpu_memory_bytes = 1024 * kGiB;
  const Estimate e = run_estimate(describe_transformer(s, "llama-7b"), o);
  EXPECT_FALSE(e.verdict.recommended.has_value());
  EXPECT_NE(e.verdict.summary.find("Nothing fits"), std::string::npos);
  std::string advice;
  for (const auto& line : e.verdict.advice) advice += line + "\n";
  EXPECT_NE(advice.find("full activation checkpointing"), std::string::npos) << advice;
  EXPECT_NE(advice.find("ZeRO does not shard them"), std::string::npos) << advice;
  // Fused attention: micro-batch 1 keeps ~23 GiB, which stage 1 (37e9 of states) leaves room for.
  EXPECT_NE(advice.find("A micro-batch of 1 fits with ZeRO stage 1 without offload"), std::string::npos) << advice;
}

TEST(Verdict, RequestedPlanIsJudged) {
  EstimateOptions o = eight_gpus(40);
  o.requested_plan = ZeroPlan{1, D::kNone, D::kNone};
  const Estimate e = run_estimate(describe_param_count(7e9, 1.31e8), o);
  ASSERT_TRUE(e.verdict.requested_fits.has_value());
  EXPECT_FALSE(*e.verdict.requested_fits);  // the model built whole in fp32 + flat weights and gradients: 8 B/param
  // Stages 0-2 build the whole model in fp32 on every GPU before they shard it (4 + 2 B/param at
  // stage 2: 42e9 B > 36 GiB usable); stage 3 on several ranks builds it partitioned.
  const PlanEstimate& stage2 = plan(e, {2, D::kNone, D::kNone});
  EXPECT_NEAR(stage2.peak.init_phase_bytes, 6 * 7e9, 1);
  EXPECT_EQ(stage2.peak.phase, "initialisation");
  EXPECT_EQ(*e.verdict.recommended, (ZeroPlan{3, D::kNone, D::kNone}));
  std::string advice;
  for (const auto& line : e.verdict.advice) advice += line;
  EXPECT_NE(advice.find("switch to ZeRO stage 3"), std::string::npos) << advice;
}

TEST(Verdict, NoMemoryNoJudgement) {
  const Estimate e = run_estimate(describe_param_count(1e9, 1e7), EstimateOptions{});
  EXPECT_FALSE(e.verdict.has_gpu_memory);
  EXPECT_FALSE(e.verdict.recommended.has_value());
  EXPECT_NE(e.verdict.summary.find("--gpu-mem"), std::string::npos);
}

TEST(Verdict, InvalidOptionsAreRejected) {
  EstimateOptions o;
  o.cluster.nodes = 0;
  EXPECT_THROW(run_estimate(describe_param_count(1e9, 0), o), EstimatorError);
  EstimateOptions bad_plan;
  bad_plan.requested_plan = ZeroPlan{1, D::kNone, D::kCpu};
  EXPECT_THROW(run_estimate(describe_param_count(1e9, 0), bad_plan), EstimatorError);
}

TEST(EstimateJson, PartsAndFormulasAreThere) {
  const Estimate e = run_estimate(describe_param_count(7e9, 1.31e8), eight_gpus(80));
  const nlohmann::json j = estimate_to_json(e);
  EXPECT_EQ(j["schema"], "shardscope.estimate/1");
  const auto& stage2 = j["plans"][2];
  EXPECT_EQ(stage2["stage"], 2);
  EXPECT_DOUBLE_EQ(stage2["model_states"]["gpu"]["total_bytes"].get<double>(), 26.25e9);
  EXPECT_DOUBLE_EQ(stage2["model_states"]["gpu"]["gradients"]["bytes"].get<double>(), 14e9 / 8);
  EXPECT_FALSE(stage2["model_states"]["gpu"]["optimizer_states"]["formula"].get<std::string>().empty());
  EXPECT_EQ(stage2["gpu_rule"], "2 + 14/N B/param");
  EXPECT_EQ(j["deepspeed"]["zero2"].size(), 2u);
  EXPECT_EQ(j["deepspeed"]["zero3"].size(), 6u);
  EXPECT_EQ(j["verdict"]["recommended"]["stage"], 1);
  EXPECT_FALSE(j["activations"]["available"].get<bool>());
}

TEST(EstimateText, ShowsUnitsTableAndDeepSpeedSection) {
  EstimateOptions o = eight_gpus(80);
  o.display_unit = ByteUnit::kGB;
  const std::string text = format_estimate_text(run_estimate(describe_param_count(7e9, 1.31e8), o), true);
  EXPECT_NE(text.find("Sizes in GB (1e9 bytes)"), std::string::npos) << text;
  EXPECT_NE(text.find("26.25"), std::string::npos);
  EXPECT_NE(text.find("38.50"), std::string::npos);
  EXPECT_NE(text.find("<- recommended"), std::string::npos);
  EXPECT_NE(text.find("estimate_zero2_model_states_mem_needs_all_cold"), std::string::npos);
  EXPECT_NE(text.find("63 GB and 31 GB"), std::string::npos);
  EXPECT_NE(text.find("How each number is computed"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::estimator
