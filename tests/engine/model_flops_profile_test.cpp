// The built-in models' flops profile (engine/model_flops_profile.hpp) against hand counts: a
// forward is 2 FLOPs per weight of every matmul per token, plus the attention products, the
// addmm bias adds, 5 per normalised element and 1 per activation element (DeepSpeed's rules).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/model_flops_profile.hpp"
#include "engine/models/model_error.hpp"
#include "tests/engine/small_model_specs.hpp"

namespace shardscope::engine {
namespace {

using testing::small_gpt2;
using testing::small_llama;

using profiler::ModuleProfile;

const ModuleProfile* child(const ModuleProfile& m, const std::string& name) {
  for (const auto& c : m.children)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(ModelFlopsProfile, Gpt2ForwardMatchesHandCount) {
  const double B = 3, T = 32, h = 64, L = 2, V = 1000, ffn = 4 * h, tokens = B * T;
  const ModuleProfile tree = model_module_profile(small_gpt2(), 3);
  const double matmul_weights = L * (h * 3 * h + h * h + h * ffn + ffn * h) + h * V;  // lm_head tied but still run
  const double attention = L * 4 * B * T * T * h;            // q k^T and p v, 2 FLOPs per MAC
  const double bias_adds = L * (3 * h + h + ffn + h);        // addmm adds numel(bias) once per call
  const double norms = (2 * L + 1) * 5 * tokens * h;         // ln_1, ln_2 per block, ln_f
  const double gelu = L * tokens * ffn;
  EXPECT_DOUBLE_EQ(profiler::total_flops(tree), 2 * matmul_weights * tokens + attention + bias_adds + norms + gelu);
  EXPECT_DOUBLE_EQ(profiler::total_macs(tree), matmul_weights * tokens + attention / 2);
  // Parameters counted once with the tied head: wte, wpe (128 rows), blocks, ln_f.
  const double block = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * ffn + ffn) + (ffn * h + h);
  EXPECT_EQ(profiler::total_params(tree), static_cast<std::int64_t>(V * h + 128 * h + L * block + 2 * h));
  EXPECT_DOUBLE_EQ(model_forward_flops(small_gpt2(), 3), profiler::total_flops(tree));
}

TEST(ModelFlopsProfile, Gpt2TreeHasHuggingFaceNames) {
  const ModuleProfile tree = model_module_profile(small_gpt2(), 1);
  EXPECT_EQ(tree.type, "GPT2LMHeadModel");
  const ModuleProfile* transformer = child(tree, "transformer");
  ASSERT_NE(transformer, nullptr);
  for (const char* name : {"wte", "wpe", "h", "ln_f"}) EXPECT_NE(child(*transformer, name), nullptr) << name;
  const ModuleProfile* h1 = child(*child(*transformer, "h"), "1");
  ASSERT_NE(h1, nullptr);
  EXPECT_EQ(h1->type, "GPT2Block");
  EXPECT_NE(child(*child(*h1, "attn"), "c_attn"), nullptr);
  EXPECT_NE(child(*child(*h1, "mlp"), "c_fc"), nullptr);
  const ModuleProfile* head = child(tree, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->params, 0);  // tied: the weight is wte's
  EXPECT_DOUBLE_EQ(head->flops, 2.0 * 32 * 64 * 1000);
}

TEST(ModelFlopsProfile, BlocksAgreeWithTheProfilerBuilders) {
  // The engine's trees are built apart (they also take head_dim != hidden/heads and qk_norm);
  // for the plain shapes they must count what profiler/flops_counter's block builders count.
  for (const ModelSpec& spec : {small_gpt2(), small_llama()}) {
    const auto& s = spec.transformer.shape;
    profiler::DecoderBlockShape shape;
    shape.batch = 2;
    shape.seq = s.seq_len;
    shape.hidden = s.hidden;
    shape.heads = s.heads;
    shape.kv_heads = s.effective_kv_heads();
    shape.ffn = s.effective_ffn();
    shape.qkv_bias = s.qkv_bias;
    shape.attn_out_bias = s.attn_out_bias;
    shape.mlp_bias = s.mlp_bias;
    const bool gpt2 = spec.kind == ModelKind::kGpt2;
    const ModuleProfile reference = gpt2 ? profiler::gpt2_block_profile(shape) : profiler::llama_block_profile(shape);
    const ModuleProfile tree = model_module_profile(spec, 2);
    const ModuleProfile& block = child(*child(tree, gpt2 ? "transformer" : "model"), gpt2 ? "h" : "layers")->children[0];
    EXPECT_DOUBLE_EQ(profiler::total_flops(block), profiler::total_flops(reference)) << model_kind_name(spec.kind);
    EXPECT_DOUBLE_EQ(profiler::total_macs(block), profiler::total_macs(reference));
    EXPECT_EQ(profiler::total_params(block), profiler::total_params(reference));
  }
}

TEST(ModelFlopsProfile, LlamaForwardMatchesHandCountAndParameterCount) {
  const ModelSpec spec = small_llama();
  const double B = 2, T = 16, h = 64, L = 3, V = 500, ffn = 160, kv = 2 * (64 / 8), tokens = B * T;
  const ModuleProfile tree = model_module_profile(spec, 2);
  const double matmul_weights = L * (h * h + 2 * h * kv + h * h + 3 * h * ffn) + h * V;
  const double attention = L * 4 * B * T * T * h;  // GQA: the products run over all 8 query heads
  const double norms = (2 * L + 1) * 5 * tokens * h, silu = L * tokens * ffn;
  EXPECT_DOUBLE_EQ(profiler::total_flops(tree), 2 * matmul_weights * tokens + attention + norms + silu);
  EXPECT_EQ(static_cast<double>(profiler::total_params(tree)),
            estimator::count_transformer_params(spec.transformer.shape).total);
  const ModuleProfile* attn = child(child(*child(tree, "model"), "layers")->children[2], "self_attn");
  ASSERT_NE(attn, nullptr);
  for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"}) EXPECT_NE(child(*attn, name), nullptr) << name;
  EXPECT_EQ(child(*attn, "k_proj")->params, 64 * 16);
}

TEST(ModelFlopsProfile, LlamaWithHeadDimAndQkNorm) {
  ModelSpec spec = small_llama();
  auto& s = spec.transformer.shape;
  s.head_dim = 16;  // 8 heads x 16 = 128 != hidden 64, as Qwen3 sizes q
  s.qk_norm = true;
  const ModuleProfile tree = model_module_profile(spec, 1);
  EXPECT_EQ(static_cast<double>(profiler::total_params(tree)), estimator::count_transformer_params(s).total);
  const ModuleProfile& attn = *child(child(*child(tree, "model"), "layers")->children[0], "self_attn");
  EXPECT_EQ(child(attn, "q_proj")->params, 64 * 128);
  EXPECT_DOUBLE_EQ(child(attn, "q_norm")->flops, 5.0 * 16 * 8 * 16);  // 5 per element of [1, 16, 8, 16]
  EXPECT_DOUBLE_EQ(attn.flops, 4.0 * 16 * 16 * 128);                   // sdpa with 8 x 16 wide queries
}

TEST(ModelFlopsProfile, MlpCountsLinearsAndRelus) {
  ModelSpec spec = default_model_spec(ModelKind::kMlp);  // 16 -> 64 -> 64 -> 1
  const ModuleProfile tree = model_module_profile(spec, 5);
  EXPECT_EQ(profiler::total_params(tree), 16 * 64 + 64 + 64 * 64 + 64 + 64 + 1);
  EXPECT_DOUBLE_EQ(profiler::total_flops(tree), 2.0 * 5 * (16 * 64 + 64 * 64 + 64) + 5 * (64 + 64));
  EXPECT_DOUBLE_EQ(tree.flops, 5.0 * (64 + 64));  // the ReLUs run in the top module's forward
  EXPECT_EQ(child(tree, "layers")->children.size(), 3u);
  spec.mlp.hidden_dims = {0};
  EXPECT_THROW(model_module_profile(spec, 1), ModelError);
  EXPECT_THROW(model_module_profile(small_gpt2(), 0), ModelError);
}

TEST(ModelFlopsProfile, ReportHonoursConfigAndStatesTheLatencyCaveat) {
  configs::FlopsProfilerConfig config;
  config.profile_step = 3;
  config.module_depth = 2;
  config.top_modules = 2;
  config.detailed = true;
  const std::string text = model_flops_report(small_gpt2(), 3, config, 2, 10.0, 20.0, 5.0);
  EXPECT_NE(text.find("Profile Summary at step 3:"), std::string::npos);
  EXPECT_NE(text.find("world size: "), std::string::npos);
  EXPECT_NE(text.find("fwd latency: "), std::string::npos);
  EXPECT_NE(text.find("iter latency: "), std::string::npos);  // bwd and step given
  EXPECT_NE(text.find("Top 2 modules"), std::string::npos);
  EXPECT_NE(text.find("depth 1:"), std::string::npos);
  EXPECT_EQ(text.find("depth 2:"), std::string::npos);  // module_depth 2 lists depths 0 and 1
  EXPECT_NE(text.find("(transformer): GPT2Model("), std::string::npos) << text;
  EXPECT_NE(text.find("(0-1): 2 x GPT2Block("), std::string::npos);
  EXPECT_NE(text.find("ShardScope does not time each module"), std::string::npos);
  EXPECT_NE(text.find("4. lm_head's weight is tied"), std::string::npos);
  EXPECT_EQ(text.find("captured in DeepSpeed"), std::string::npos);  // DeepSpeed's note 3 replaced
  EXPECT_NE(text.find("10 ms = 100% latency"), std::string::npos);  // the top module carries fwd_ms

  config.detailed = false;
  const std::string brief = model_flops_report(small_gpt2(), 3, config, 2, 10.0, -1, -1);
  EXPECT_EQ(brief.find("Detailed Profile per GPU"), std::string::npos);
  EXPECT_EQ(brief.find("iter latency: "), std::string::npos);  // bwd/step not timed
  EXPECT_NE(brief.find("Note: fwd latency is measured for the top module only"), std::string::npos);
}

TEST(ModelFlopsProfile, JsonCarriesTotalsAndNotes) {
  configs::FlopsProfilerConfig config;
  const nlohmann::json j = model_flops_report_json(small_llama(), 2, config, 4, 8.0, 16.0, 4.0);
  EXPECT_DOUBLE_EQ(j.at("fwd_flops").get<double>(), model_forward_flops(small_llama(), 2));
  EXPECT_EQ(j.at("world_size"), 4);
  EXPECT_EQ(j.at("tokens_per_micro_batch"), 32);
  EXPECT_EQ(j.at("per_module_latency_measured"), false);
  EXPECT_DOUBLE_EQ(j.at("iter_latency_ms").get<double>(), 28.0);
  EXPECT_DOUBLE_EQ(j.at("flops_per_s").get<double>(), 3 * model_forward_flops(small_llama(), 2) / 0.028);
  EXPECT_EQ(j.at("modules").at("children").at(0).at("name"), "model");
  EXPECT_EQ(j.at("notes").size(), 1u);  // untied head: only the latency caveat
}

}  // namespace
}  // namespace shardscope::engine
