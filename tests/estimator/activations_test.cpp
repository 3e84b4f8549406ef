// Activation memory against Korthikanti et al. 2022, eq. (1) and section 5, worked by hand.
#include <gtest/gtest.h>

#include "estimator/activations.hpp"

#include <algorithm>

namespace shardscope::estimator {
namespace {

// GPT-2-style layout with ffn = 4h and dropout: the paper's setting.
ModelDescription gpt_model(long long layers, long long hidden, long long heads, long long vocab, long long seq) {
  TransformerShape s = default_shape(TransformerLayout::kGpt2);
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.vocab = vocab;
  s.seq_len = seq;
  return describe_transformer(s, "gpt");
}

WorkloadSettings workload(long long b, ActivationCheckpointing mode = ActivationCheckpointing::kNone) {
  WorkloadSettings w;
  w.micro_batch = b;
  w.checkpointing = mode;
  return w;
}

TEST(Activations, PaperFormulaByHand) {
  // s = 1024, b = 1, h = 768, a = 12: sbh(34 + 5as/h) = 786432 x (34 + 80) = 89,653,248 bytes.
  EXPECT_EQ(korthikanti_layer_bytes(1024, 1, 768, 12), 89653248.0);
}

WorkloadSettings paper_workload(long long b, ActivationCheckpointing mode = ActivationCheckpointing::kNone) {
  WorkloadSettings w = workload(b, mode);
  w.attention = AttentionKernel::kMaterialized;  // the paper's setting: scores kept, dropout on
  w.dropout = true;
  return w;
}

TEST(Activations, GptLayoutEqualsThePaperWithScoresAndDropout) {
  const auto model = gpt_model(12, 768, 12, 50257, 1024);
  const auto a = estimate_activations(model, paper_workload(4), Precision::kBf16, 1);
  ASSERT_TRUE(a.available);
  const double sb = 1024.0 * 4;
  // The paper's layer plus the two LayerNorms' fp32 mean and rstd per row, which it leaves out.
  EXPECT_DOUBLE_EQ(a.per_layer_bytes, korthikanti_layer_bytes(1024, 4, 768, 12) + 16 * sb);
  // Outside: the final norm (input, output, statistics), the bf16 logits, ids and the loss's rows.
  EXPECT_DOUBLE_EQ(a.outside_layers_bytes, 2 * 2 * sb * 768 + 8 * sb + 2 * sb * 50257 + 36 * sb);
  // The peak is at the head: everything kept, plus the LM head's weight and input gradients.
  EXPECT_DOUBLE_EQ(a.head_phase_bytes, 12 * a.per_layer_bytes + a.outside_layers_bytes + 2.0 * 50257 * 768 + 2 * sb * 768);
  EXPECT_DOUBLE_EQ(a.total_bytes, a.head_phase_bytes);
  EXPECT_DOUBLE_EQ(a.bytes_per_sample * 4, a.total_bytes);
}

TEST(Activations, SelectiveKeeps34sbh) {
  const auto model = gpt_model(24, 1024, 16, 50257, 2048);
  const auto a = estimate_activations(model, paper_workload(2, ActivationCheckpointing::kSelective), Precision::kBf16, 1);
  const double sb = 2048.0 * 2, sbh = sb * 1024;
  EXPECT_DOUBLE_EQ(a.stored_per_layer_bytes, 34 * sbh + 16 * sb);
  EXPECT_DOUBLE_EQ(a.recompute_bytes, 5.0 * 16 * 2048 * 2048 * 2);  // 5as^2b for the one layer in backward
}

TEST(Activations, FullCheckpointingKeepsLayerInputs) {
  const auto model = gpt_model(24, 1024, 16, 50257, 2048);
  const auto none = estimate_activations(model, workload(1), Precision::kBf16, 1);
  const auto full = estimate_activations(model, workload(1, ActivationCheckpointing::kFull), Precision::kBf16, 1);
  const double sbh = 2048.0 * 1024;
  EXPECT_DOUBLE_EQ(full.stored_per_layer_bytes, 2 * sbh);  // 2sbhL in the paper
  // The head phase keeps the inputs and the logits; the last layer's phase the inputs, one rebuilt
  // layer and its backward's gradient intermediates (2e*sbf + 2e*sbh).
  EXPECT_DOUBLE_EQ(full.head_phase_bytes, 24 * 2 * sbh + none.outside_layers_bytes + none.head_working_bytes);
  EXPECT_DOUBLE_EQ(full.layer_phase_bytes, 24 * 2 * sbh + none.per_layer_bytes + 2 * 2 * sbh * 4 + 2 * 2 * sbh);
  EXPECT_DOUBLE_EQ(full.total_bytes, std::max(full.head_phase_bytes, full.layer_phase_bytes));
  EXPECT_LT(full.total_bytes, none.total_bytes / 4);
  // cpu_checkpointing moves the kept inputs to host memory, per node for 8 ranks.
  WorkloadSettings cpu = workload(1, ActivationCheckpointing::kFull);
  cpu.cpu_checkpointing = true;
  const auto moved = estimate_activations(model, cpu, Precision::kBf16, 8);
  EXPECT_DOUBLE_EQ(moved.cpu_bytes_per_node, 8 * 24 * 2 * sbh);
  EXPECT_DOUBLE_EQ(moved.head_phase_bytes, full.head_phase_bytes - 24 * 2 * sbh);
}

TEST(Activations, LlamaLayoutByHand) {
  // RMSNorm keeps its fp32 input copy, the normalised value and the output (4 + 2e bytes an
  // element, 4 B of statistic a row); fused attention Q, K, V after rotary, the output and a fp32
  // log-sum-exp per row and head; SwiGLU four e*sb*f tensors.
  TransformerShape s = default_shape(TransformerLayout::kLlama);
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.kv_heads = 2;
  s.ffn = 160;
  s.vocab = 100;
  s.seq_len = 32;
  const auto a = estimate_activations(describe_transformer(s, "tiny"), workload(3), Precision::kBf16, 1);
  const double sb = 32 * 3, e = 2, h = 64, q = 64, kv = 32, f = 160;
  const double expected = 2 * ((4 + 2 * e) * sb * h + 4 * sb) + e * sb * (q + 2 * kv) + e * sb * q + 4 * sb * 4 + 4 * e * sb * f;
  EXPECT_DOUBLE_EQ(a.per_layer_bytes, expected);
  EXPECT_FALSE(a.scores_materialized);
  // fp32 with grouped K/V: SDPA has no fused kernel for it, so the scores are kept, K and V at every head.
  const auto a32 = estimate_activations(describe_transformer(s, "tiny"), workload(3), Precision::kFp32, 1);
  EXPECT_TRUE(a32.scores_materialized);
  EXPECT_NE(a32.attention_note.find("math path"), std::string::npos);
  const double e4 = 4;
  EXPECT_DOUBLE_EQ(a32.per_layer_bytes, 2 * ((4 + 2 * e4) * sb * h + 4 * sb) + e4 * sb * 4 * q + e4 * 4 * 32 * 32 * 3 +
                                            4 * e4 * sb * f);
}

TEST(Activations, FusedAttentionDropsTheQuadraticTerm) {
  const auto model = gpt_model(1, 1024, 16, 100, 4096);
  WorkloadSettings w = workload(1);
  w.attention = AttentionKernel::kMaterialized;
  const auto eager = estimate_activations(model, w, Precision::kBf16, 1);
  const auto fused = estimate_activations(model, workload(1), Precision::kBf16, 1);  // the default
  const double sb = 4096.0, sbh = sb * 1024;
  // Materialised: the softmax output (e*as^2b) and the projection's copy of the output; fused: the
  // output itself and a fp32 log-sum-exp per row and head.
  EXPECT_DOUBLE_EQ(eager.per_layer_bytes - fused.per_layer_bytes, 2.0 * 16 * 4096 * 4096 - 4.0 * sb * 16);
  EXPECT_DOUBLE_EQ(fused.per_layer_bytes, 32 * sbh + 4.0 * sb * 16 + 16 * sb);
}

TEST(Activations, UnavailableWithoutShape) {
  const auto a = estimate_activations(describe_param_count(7e9, 0), workload(1), Precision::kBf16, 1);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.unavailable_reason.find("shape"), std::string::npos);
}

TEST(Activations, SeqLenFromWorkloadOverridesModel) {
  const auto model = gpt_model(1, 64, 4, 10, 1024);
  WorkloadSettings w = workload(1);
  w.seq_len = 128;
  EXPECT_EQ(estimate_activations(model, w, Precision::kBf16, 1).seq_len, 128);
}

}  // namespace
}  // namespace shardscope::estimator
