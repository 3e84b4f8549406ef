// DeepSpeed's flops-profiler arithmetic against hand counts (worked out in the comments) and
// print_model_profile()'s text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/flops_counter.hpp"

namespace shardscope::profiler {
namespace {

TEST(FlopsOps, DeepSpeedFormulas) {
  EXPECT_DOUBLE_EQ(linear_op({2, 3, 5}, 7).macs, 2 * 3 * 5 * 7);
  EXPECT_DOUBLE_EQ(linear_op({2, 3, 5}, 7).flops, 2 * 2 * 3 * 5 * 7);  // bias not counted
  EXPECT_DOUBLE_EQ(addmm_op({7}, {6, 5}, {5, 7}).flops, 2 * 6 * 5 * 7 + 7);
  EXPECT_DOUBLE_EQ(matmul_op({4, 6, 5}, {4, 5, 3}).macs, 4 * 6 * 5 * 3);
  EXPECT_DOUBLE_EQ(layer_norm_op({2, 10}, true).flops, 100);
  EXPECT_DOUBLE_EQ(layer_norm_op({2, 10}, false).flops, 80);
  EXPECT_DOUBLE_EQ(rms_norm_op({2, 10}, true).macs, 0);
  EXPECT_DOUBLE_EQ(activation_op({3, 4}).flops, 12);
  EXPECT_DOUBLE_EQ(elementwise_op({3, 1, 5}, {3, 4}).flops, 3 * 4 * 5);
  EXPECT_DOUBLE_EQ(embedding_op().flops + dropout_op().macs, 0);
  // q [1,2,3,4], k [1,2,5,4], v [1,2,5,6]: 24*5 + 6*5*6 = 300 MACs.
  EXPECT_DOUBLE_EQ(attention_op({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 6}).macs, 300);
  EXPECT_DOUBLE_EQ(attention_op({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 6}).flops, 600);
  EXPECT_THROW(matmul_op({2}, {}), std::invalid_argument);
}

// GPT-2 block, B=2 T=8 (N=16 tokens), H=16, 4 heads, ffn 64, biases:
//  ln_1/ln_2 5NH = 1280 flops each; c_attn 16*16*48 = 12288 MACs, 2*12288 + 48 flops;
//  sdpa 2*(2*4*8*4*8) = 4096 MACs; attn.c_proj 4096 MACs, 8192 + 16; c_fc 16384 MACs, 32768 + 64;
//  gelu 16*64 = 1024; mlp.c_proj 16384 MACs, 32768 + 16.
//  MACs 53248 (= 12 N H^2 + 2 B T^2 H), flops 110224, params 3280 (= 12 H^2 + 13 H).
DecoderBlockShape gpt2_shape() {
  DecoderBlockShape s;
  s.batch = 2, s.seq = 8, s.hidden = 16, s.heads = 4, s.kv_heads = 4, s.ffn = 64;
  return s;
}

TEST(FlopsBlocks, Gpt2BlockMatchesHandCounts) {
  const auto block = gpt2_block_profile(gpt2_shape());
  EXPECT_DOUBLE_EQ(total_macs(block), 53248);
  EXPECT_DOUBLE_EQ(total_flops(block), 110224);
  EXPECT_EQ(total_params(block), 3280);
  ASSERT_EQ(block.children.size(), 4u);
  EXPECT_EQ(block.children[1].name, "attn");
  EXPECT_DOUBLE_EQ(total_macs(block.children[1]), 12288 + 4096 + 4096);
  EXPECT_DOUBLE_EQ(block.children[1].children[0].flops, 24624);
}

// Llama block, B=1 T=8 (N=8), H=16, 4 heads of 4, 2 KV heads (kv dim 8), ffn 40, no biases:
//  norms 5*8*16 = 640 each; q,o 2048 MACs; k,v 1024; sdpa 128*8 + 32*8*4 = 2048;
//  gate, up, down 5120 each; silu 320. MACs 23552, flops 48704, params 2720.
TEST(FlopsBlocks, LlamaBlockMatchesHandCounts) {
  DecoderBlockShape s;
  s.batch = 1, s.seq = 8, s.hidden = 16, s.heads = 4, s.kv_heads = 2, s.ffn = 40;
  s.qkv_bias = s.attn_out_bias = s.mlp_bias = false;
  const auto block = llama_block_profile(s);
  EXPECT_DOUBLE_EQ(total_macs(block), 23552);
  EXPECT_DOUBLE_EQ(total_flops(block), 48704);
  EXPECT_EQ(total_params(block), 2720);
  s.kv_heads = 3;
  EXPECT_THROW(llama_block_profile(s), std::invalid_argument);
}

TEST(FlopsProfile, NumberStrings) {
  EXPECT_EQ(flops_number_to_string(53248), "53.25 K");
  EXPECT_EQ(flops_number_to_string(124439808), "124.44 M");
  EXPECT_EQ(flops_number_to_string(0), "0 ");
  EXPECT_EQ(flops_number_to_string(0.002), "2 m");
  EXPECT_EQ(flops_number_to_string(3e12), "3 T");
}

std::string pad(const std::string& label, const std::string& value) {
  return label + std::string(70 - label.size(), ' ') + "  " + value + std::string(value.size() < 8 ? 8 - value.size() : 0, ' ');
}

TEST(FlopsProfile, PrintModelProfileText) {
  ModuleProfile block = gpt2_block_profile(gpt2_shape());
  block.latency_ms = 2;
  FlopsProfileOptions o;
  o.top_modules = 2;
  o.micro_batch_per_gpu = 2;
  o.fwd_latency_ms = 2;
  o.bwd_latency_ms = 4;
  o.step_latency_ms = 1;
  const std::string text = format_model_profile(block, o);
  for (const std::string& expected :
       {std::string("Profile Summary at step 1:"), pad("params per GPU: ", "3.28 K"),
        pad("fwd MACs per GPU: ", "53.25 KMACs"), pad("fwd flops per GPU: ", "110.22 K"),
        pad("fwd latency: ", "2 ms"),
        pad("fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ", "55.11 MFLOPS"),  // 110224 / 2 ms
        pad("bwd FLOPS per GPU = 2 * fwd flops per GPU / bwd latency: ", "55.11 MFLOPS"),
        pad("iter latency: ", "7 ms"),
        pad("FLOPS per GPU = 3 * fwd flops per GPU / iter latency: ", "47.24 MFLOPS"),  // 3 * 110224 / 7 ms
        pad("samples/second: ", "285.71"),                                             // 2 / 7 ms
        std::string("Top 2 modules in terms of params, MACs or fwd latency at different model depths:\ndepth 0:\n"),
        std::string("depth 1:\n    params      - {'GPT2MLP': '2.13 K', 'GPT2Attention': '1.09 K'}\n"
                    "    MACs        - {'GPT2MLP': '32.77 KMACs', 'GPT2Attention': '20.48 KMACs'}\n"),
        std::string("GPT2Block(\n  3.28 K = 100% Params, 53.25 KMACs = 100% MACs, 2 ms = 100% latency, 55.11 MFLOPS\n"
                    "  (ln_1): LayerNorm(32 = 0.98% Params, 0 MACs = 0% MACs, 0 s = 0% latency, 0 FLOPS, (16,), "
                    "eps=1e-05, elementwise_affine=True)\n")})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n---\n" << text;
  EXPECT_EQ(text.find("depth 2:"), std::string::npos);  // DeepSpeed's range(depth) skips the leaves
  o.detailed = false;
  o.bwd_latency_ms.reset();
  const std::string brief = format_model_profile(block, o);
  EXPECT_EQ(brief.find("Detailed Profile per GPU"), std::string::npos);
  EXPECT_EQ(brief.find("bwd latency: "), std::string::npos);
  EXPECT_EQ(brief.find("samples/second"), std::string::npos);
}

TEST(FlopsProfile, ModuleListFoldsIdenticalBlocksAndJson) {
  ModuleProfile list;
  list.name = "h";
  list.type = "ModuleList";
  for (int i = 0; i < 3; ++i) {
    list.children.push_back(gpt2_block_profile(gpt2_shape()));
    list.children.back().name = std::to_string(i);
    list.children.back().latency_ms = i == 2 ? 2 : 1;  // the third differs in latency
  }
  ModuleProfile model;
  model.type = "GPT2Model";
  model.children.push_back(list);
  const std::string text = format_model_profile(model, {});
  EXPECT_NE(text.find("  (h): ModuleList(\n    (0-1): 2 x GPT2Block(\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    (2): GPT2Block(\n"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(total_latency_ms(model), 4.0);  // ModuleList and root: sum of children
  const auto j = model_profile_to_json(model, {});
  EXPECT_EQ(j["params"], 3 * 3280);
  EXPECT_DOUBLE_EQ(j["fwd_macs"].get<double>(), 3 * 53248.0);
  EXPECT_EQ(j["modules"]["children"][0]["children"][2]["latency_ms"], 2.0);
  EXPECT_FALSE(j.contains("iter_latency_ms"));
}

}  // namespace
}  // namespace shardscope::profiler
