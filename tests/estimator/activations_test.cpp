// Activation memory against Korthikanti et al. 2022, eq. (1) and section 5, worked by hand.
#include <gtest/gtest.h>

#include "estimator/activations.hpp"

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

TEST(Activations, GptLayoutEqualsThePaper) {
  const auto model = gpt_model(12, 768, 12, 50257, 1024);
  const auto a = estimate_activations(model, workload(4), Precision::kBf16, 1);
  ASSERT_TRUE(a.available);
  EXPECT_DOUBLE_EQ(a.per_layer_bytes, korthikanti_layer_bytes(1024, 4, 768, 12));
  // Outside the layers: 4sbh (final norm, LM head input) + 4sbV (fp32 logits).
  EXPECT_DOUBLE_EQ(a.outside_layers_bytes, 4.0 * 1024 * 4 * 768 + 4.0 * 1024 * 4 * 50257);
  EXPECT_DOUBLE_EQ(a.total_bytes, 12 * a.per_layer_bytes + a.outside_layers_bytes);
  EXPECT_DOUBLE_EQ(a.bytes_per_sample * 4, a.total_bytes);
}

TEST(Activations, SelectiveKeeps34sbh) {
  const auto model = gpt_model(24, 1024, 16, 50257, 2048);
  const auto a = estimate_activations(model, workload(2, ActivationCheckpointing::kSelective), Precision::kBf16, 1);
  const double sbh = 2048.0 * 2 * 1024;
  EXPECT_DOUBLE_EQ(a.stored_per_layer_bytes, 34 * sbh);
  EXPECT_DOUBLE_EQ(a.recompute_bytes, 5.0 * 16 * 2048 * 2048 * 2);  // 5as^2b for the one layer in backward
}

TEST(Activations, FullCheckpointingKeepsLayerInputs) {
  const auto model = gpt_model(24, 1024, 16, 50257, 2048);
  const auto none = estimate_activations(model, workload(1), Precision::kBf16, 1);
  const auto full = estimate_activations(model, workload(1, ActivationCheckpointing::kFull), Precision::kBf16, 1);
  const double sbh = 2048.0 * 1024;
  EXPECT_DOUBLE_EQ(full.stored_per_layer_bytes, 2 * sbh);  // 2sbhL in the paper
  EXPECT_DOUBLE_EQ(full.total_bytes, 24 * 2 * sbh + none.per_layer_bytes + none.outside_layers_bytes);
  EXPECT_LT(full.total_bytes, none.total_bytes / 5);
  // cpu_checkpointing moves the kept inputs to host memory, per node for 8 ranks.
  WorkloadSettings cpu = workload(1, ActivationCheckpointing::kFull);
  cpu.cpu_checkpointing = true;
  const auto moved = estimate_activations(model, cpu, Precision::kBf16, 8);
  EXPECT_DOUBLE_EQ(moved.cpu_bytes_per_node, 8 * 24 * 2 * sbh);
  EXPECT_DOUBLE_EQ(moved.total_bytes, full.total_bytes - 24 * 2 * sbh);
}

TEST(Activations, LlamaLayoutByHand) {
  // SwiGLU, no dropout, GQA: per layer e*sb*(h + 2q + 2kv) + e*as^2b + e*sb*h + 4e*sb*f + 2e*sb*h.
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
  const double expected = e * sb * (h + 2 * q + 2 * kv) + e * 4 * 32 * 32 * 3 + e * sb * h + 4 * e * sb * f + 2 * e * sb * h;
  EXPECT_DOUBLE_EQ(a.per_layer_bytes, expected);
  // fp32 activations double every stored element.
  const auto a32 = estimate_activations(describe_transformer(s, "tiny"), workload(3), Precision::kFp32, 1);
  EXPECT_DOUBLE_EQ(a32.per_layer_bytes, 2 * expected);
}

TEST(Activations, FlashAttentionDropsTheQuadraticTerm) {
  const auto model = gpt_model(1, 1024, 16, 100, 4096);
  WorkloadSettings w = workload(1);
  const auto eager = estimate_activations(model, w, Precision::kBf16, 1);
  w.flash_attention = true;
  const auto flash = estimate_activations(model, w, Precision::kBf16, 1);
  const double sbh = 4096.0 * 1024;
  EXPECT_DOUBLE_EQ(eager.per_layer_bytes - flash.per_layer_bytes, 5.0 * 16 * 4096 * 4096 - 4.0 * 4096 * 16);
  EXPECT_DOUBLE_EQ(flash.per_layer_bytes, 34 * sbh + 4.0 * 4096 * 16);
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
