// Built-in models: parameter counts against the estimator, Hugging Face names, loss at init,
// causal masking, grouped-query attention, layers and hooks, activation checkpointing, specs
// from config.json.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "engine/models/chunked_cross_entropy.hpp"
#include "engine/models/gpt2_model.hpp"
#include "engine/models/llama_model.hpp"
#include "engine/models/mlp_model.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/model_spec.hpp"
#include "tests/engine/temp_dir.hpp"

namespace se = shardscope::engine;
namespace est = shardscope::estimator;

namespace {

se::TransformerOptions tiny(est::TransformerLayout layout) {
  se::TransformerOptions o;
  o.shape = est::default_shape(layout);
  o.shape.layers = 2;
  o.shape.hidden = 64;
  o.shape.heads = 4;
  o.shape.vocab = 512;
  o.shape.seq_len = 16;
  if (layout == est::TransformerLayout::kLlama) {
    o.shape.ffn = 96;
    o.shape.kv_heads = 2;
    o.norm_eps = 1e-6;
  } else {
    o.shape.max_positions = 32;
  }
  return o;
}

std::shared_ptr<se::TrainableModel> make(const se::TransformerOptions& o, std::uint64_t seed = 7) {
  torch::manual_seed(seed);
  if (o.shape.layout == est::TransformerLayout::kGpt2) return std::make_shared<se::Gpt2Model>(o);
  return std::make_shared<se::LlamaModel>(o);
}

std::int64_t count(torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

se::Batch random_batch(std::int64_t vocab, std::int64_t b, std::int64_t t, std::uint64_t seed = 3) {
  torch::manual_seed(seed);
  return {torch::randint(vocab, {b, t}, torch::kLong), torch::randint(vocab, {b, t}, torch::kLong)};
}

std::map<std::string, torch::Tensor> gradients(se::TrainableModel& model, const se::Batch& batch) {
  model.zero_grad();
  model.loss(batch).backward();
  std::map<std::string, torch::Tensor> grads;
  for (const auto& p : model.named_parameters()) grads[p.key()] = p.value().grad().clone();
  return grads;
}

}  // namespace

TEST(Models, ParameterCountsEqualTheEstimatorExactly) {
  std::vector<se::TransformerOptions> shapes = {tiny(est::TransformerLayout::kGpt2), tiny(est::TransformerLayout::kLlama)};
  auto untied_gpt2 = shapes[0];
  untied_gpt2.shape.tied_embeddings = false;
  untied_gpt2.shape.mlp_bias = false;
  auto tied_llama = shapes[1];
  tied_llama.shape.tied_embeddings = true;
  auto qwen = shapes[1];  // qwen2/qwen3 flags: q/k/v bias, per-head q/k norm, explicit head_dim
  qwen.shape.qkv_bias = true;
  qwen.shape.qk_norm = true;
  qwen.shape.head_dim = 32;
  shapes.insert(shapes.end(), {untied_gpt2, tied_llama, qwen});
  for (const auto& o : shapes) {
    auto model = make(o);
    EXPECT_EQ(count(*model), static_cast<std::int64_t>(est::count_transformer_params(o.shape).total))
        << model->kind() << " tied=" << o.shape.tied_embeddings;
  }
  se::MlpModel mlp({16, {64, 32}, 3});
  EXPECT_EQ(count(mlp), 16 * 64 + 64 + 64 * 32 + 32 + 32 * 3 + 3);
}

TEST(Models, ParametersCarryHuggingFaceNamesAndLayouts) {
  auto gpt2 = make(tiny(est::TransformerLayout::kGpt2));
  auto p = gpt2->named_parameters();
  EXPECT_EQ(p["transformer.h.0.attn.c_attn.weight"].sizes(), torch::IntArrayRef({64, 192}));  // Conv1D: [in, out]
  EXPECT_EQ(p["transformer.h.1.mlp.c_fc.weight"].sizes(), torch::IntArrayRef({64, 256}));
  EXPECT_EQ(p["transformer.wpe.weight"].sizes(), torch::IntArrayRef({32, 64}));
  for (const char* name : {"transformer.wte.weight", "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_proj.bias",
                           "transformer.h.1.ln_2.weight", "transformer.h.1.mlp.c_proj.weight", "transformer.ln_f.bias"})
    EXPECT_NE(p.find(name), nullptr) << name;
  EXPECT_EQ(p.find("lm_head.weight"), nullptr);  // tied to wte

  auto llama = make(tiny(est::TransformerLayout::kLlama));
  auto q = llama->named_parameters();
  EXPECT_EQ(q["model.layers.0.self_attn.q_proj.weight"].sizes(), torch::IntArrayRef({64, 64}));
  EXPECT_EQ(q["model.layers.0.self_attn.k_proj.weight"].sizes(), torch::IntArrayRef({32, 64}));  // 2 kv heads x 16
  EXPECT_EQ(q["model.layers.1.mlp.down_proj.weight"].sizes(), torch::IntArrayRef({64, 96}));
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                           "model.layers.0.post_attention_layernorm.weight", "model.layers.1.mlp.gate_proj.weight",
                           "model.layers.1.self_attn.o_proj.weight", "model.norm.weight", "lm_head.weight"})
    EXPECT_NE(q.find(name), nullptr) << name;
}

TEST(Models, InitialLossIsNearLogVocab) {
  for (auto layout : {est::TransformerLayout::kGpt2, est::TransformerLayout::kLlama}) {
    auto model = make(tiny(layout));
    const auto loss = model->loss(random_batch(512, 4, 16)).item<double>();
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_NEAR(loss, std::log(512.0), 0.05) << est::layout_name(layout);
  }
}

TEST(Models, ChangingAFutureTokenLeavesEarlierLogitsUnchanged) {
  for (auto layout : {est::TransformerLayout::kGpt2, est::TransformerLayout::kLlama}) {
    auto model = make(tiny(layout));
    torch::NoGradGuard no_grad;
    auto ids = random_batch(512, 2, 12).inputs;
    auto changed = ids.clone();
    changed.index_put_({torch::indexing::Slice(), 8}, (ids.index({torch::indexing::Slice(), 8}) + 1) % 512);
    const auto a = model->forward(ids), b = model->forward(changed);
    const auto before = torch::indexing::Slice(0, 8), after = torch::indexing::Slice(8, 12);
    EXPECT_EQ((a.index({torch::indexing::Slice(), before}) - b.index({torch::indexing::Slice(), before})).abs().max().item<float>(), 0.0f);
    EXPECT_GT((a.index({torch::indexing::Slice(), after}) - b.index({torch::indexing::Slice(), after})).abs().max().item<float>(), 1e-4f);
  }
}

TEST(Models, GroupedQueryAttentionEqualsMultiHeadWithRepeatedKeysAndValues) {
  auto gqa_options = tiny(est::TransformerLayout::kLlama);  // 4 heads share 2 kv heads
  auto mha_options = gqa_options;
  mha_options.shape.kv_heads = 4;
  auto gqa = make(gqa_options), mha = make(mha_options, 99);
  {
    torch::NoGradGuard no_grad;
    auto src = gqa->named_parameters();
    for (auto& item : mha->named_parameters()) {
      const auto& name = item.key();
      auto value = src[name];
      if (name.find("k_proj") != std::string::npos || name.find("v_proj") != std::string::npos)
        value = value.view({2, 16, 64}).repeat_interleave(2, 0).reshape({64, 64});  // kv head j serves heads 2j, 2j+1
      item.value().copy_(value);
    }
  }
  torch::NoGradGuard no_grad;
  const auto ids = random_batch(512, 2, 10).inputs;
  EXPECT_LT((gqa->forward(ids) - mha->forward(ids)).abs().max().item<float>(), 1e-5f);
}

TEST(Models, ActivationCheckpointingGivesTheSameGradients) {
  for (auto layout : {est::TransformerLayout::kGpt2, est::TransformerLayout::kLlama}) {
    auto model = make(tiny(layout));
    const auto batch = random_batch(512, 2, 16);
    const auto plain = gradients(*model, batch);
    model->set_activation_checkpointing(true);
    const auto checkpointed = gradients(*model, batch);
    ASSERT_EQ(plain.size(), checkpointed.size());
    for (const auto& [name, g] : plain) {
      ASSERT_TRUE(checkpointed.at(name).defined()) << name;
      EXPECT_LE((g - checkpointed.at(name)).abs().max().item<double>(), 1e-6) << name;
    }
    EXPECT_GT(plain.at(est::layout_name(layout) == std::string("gpt2") ? "transformer.h.0.attn.c_attn.weight"
                                                                       : "model.layers.0.self_attn.q_proj.weight")
                  .abs().sum().item<double>(), 0.0);
  }
}

TEST(Models, LayersCoverEveryParameterInForwardOrder) {
  auto gpt2 = make(tiny(est::TransformerLayout::kGpt2));
  const auto layers = gpt2->layers();
  ASSERT_EQ(layers.size(), 6u);  // wte, wpe, h.0, h.1, ln_f, tied head (wte again)
  EXPECT_EQ(layers[2].name, "transformer.h.0");
  EXPECT_EQ(layers.back().module, layers.front().module);
  std::set<const void*> covered;
  for (const auto& layer : layers)
    for (const auto& p : layer.module->parameters()) covered.insert(p.data_ptr());
  EXPECT_EQ(covered.size(), gpt2->parameters().size());
  auto llama = make(tiny(est::TransformerLayout::kLlama));
  EXPECT_EQ(llama->layers().back().name, "lm_head");
}

namespace {
class RecordingHooks : public se::LayerHooks {
 public:
  void before_forward(std::size_t index) override { events.push_back("before " + std::to_string(index)); }
  torch::Tensor after_forward(std::size_t index, torch::Tensor output) override {
    events.push_back("after " + std::to_string(index));
    grad_fns.push_back(output.grad_fn() ? output.grad_fn()->name() : "");
    return output;
  }
  std::vector<std::string> events;
  std::vector<std::string> grad_fns;
};
}  // namespace

TEST(Models, LayerHooksRunAroundEachLayerInOrder) {
  auto llama = make(tiny(est::TransformerLayout::kLlama));
  auto hooks = std::make_shared<RecordingHooks>();
  llama->set_layer_hooks(hooks);
  llama->set_activation_checkpointing(true);
  llama->loss(random_batch(512, 1, 8)).backward();
  const auto n = llama->layers().size();
  ASSERT_EQ(hooks->events.size(), 2 * n);  // recomputation in backward does not call them again
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(hooks->events[2 * i], "before " + std::to_string(i));
    EXPECT_EQ(hooks->events[2 * i + 1], "after " + std::to_string(i));
  }
  // Blocks (layers 1 and 2) ran through the recomputing function; the others did not.
  EXPECT_NE(hooks->grad_fns[1].find("CheckpointFunction"), std::string::npos) << hooks->grad_fns[1];
  EXPECT_NE(hooks->grad_fns[2].find("CheckpointFunction"), std::string::npos) << hooks->grad_fns[2];
  EXPECT_EQ(hooks->grad_fns[3].find("CheckpointFunction"), std::string::npos) << hooks->grad_fns[3];
}

TEST(Models, SpecsFromHuggingFaceConfigs) {
  const shardscope::test::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.file(name)) << text;
    return dir.file(name);
  };
  auto gpt2 = se::model_spec_from_hf_config(
      write("gpt2.json", R"({"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":4,"n_positions":128,
                             "vocab_size":500,"layer_norm_epsilon":1e-5,"resid_pdrop":0.0,"attn_pdrop":0.0})"), 64);
  EXPECT_EQ(gpt2.kind, se::ModelKind::kGpt2);
  EXPECT_EQ(gpt2.transformer.shape.max_positions, 128);
  EXPECT_EQ(gpt2.transformer.shape.seq_len, 64);
  auto llama = se::model_spec_from_hf_config(
      write("llama.json", R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
                              "num_key_value_heads":1,"intermediate_size":128,"vocab_size":300,"rope_theta":500000.0,
                              "rms_norm_eps":1e-5,"max_position_embeddings":256,
                              "rope_scaling":{"rope_type":"llama3","factor":8.0}})"), 0);
  EXPECT_EQ(llama.kind, se::ModelKind::kLlama);
  EXPECT_EQ(llama.transformer.shape.kv_heads, 1);
  EXPECT_DOUBLE_EQ(llama.transformer.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(llama.transformer.norm_eps, 1e-5);
  ASSERT_EQ(llama.notes.size(), 1u);
  EXPECT_NE(llama.notes[0].find("rope_scaling"), std::string::npos);
  auto model = se::build_model(llama);
  EXPECT_EQ(count(*model), static_cast<std::int64_t>(est::count_transformer_params(llama.transformer.shape).total));
  try {
    se::model_spec_from_hf_config(write("neox.json", R"({"model_type":"gpt_neox"})"), 0);
    FAIL() << "gpt_neox has no built-in model";
  } catch (const se::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("gpt_neox"), std::string::npos);
  }
  EXPECT_THROW(se::model_spec_from_hf_config(write("bad.json", R"({"model_type":"llama","hidden_size":64})"), 0),
               se::ModelError);
}

TEST(Models, BadShapesAndKindsAreRejectedWithTheField) {
  auto o = tiny(est::TransformerLayout::kLlama);
  o.shape.kv_heads = 3;  // does not divide 4 heads
  EXPECT_THROW(se::LlamaModel{o}, se::ModelError);
  auto g = tiny(est::TransformerLayout::kGpt2);
  g.shape.gated_mlp = true;
  try {
    se::Gpt2Model model(g);
    FAIL();
  } catch (const se::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("gated_mlp"), std::string::npos);
  }
  try {
    se::parse_model_kind("lama", "--model");
    FAIL();
  } catch (const se::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'llama'"), std::string::npos);
  }
}

// The chunked loss against F.cross_entropy on fp32 logits: the same loss and gradient, with ignored
// rows, several row blocks (including a short last one), and 16-bit logits (gradient in their dtype).
TEST(Models, ChunkedCrossEntropyEqualsCrossEntropyOfFp32Logits) {
  namespace F = torch::nn::functional;
  auto gen = at::detail::createCPUGenerator(7);
  const std::int64_t rows = 37, vocab = 101;
  const auto base = torch::randn({rows, vocab}, gen) * 4;
  auto targets = torch::randint(0, vocab, {rows}, gen);
  targets.index_put_({torch::tensor({2, 3, 30})}, -100);
  const auto upstream = torch::tensor(0.7);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16}) {
    for (std::int64_t block : {std::int64_t{32} << 20, vocab * 5, std::int64_t{1}}) {
      const auto logits = base.to(dtype).clone().requires_grad_(true);
      const auto ours = se::chunked_cross_entropy(logits, targets, -100, block);
      ours.backward(upstream);
      const auto ref_logits = base.to(dtype).to(torch::kFloat32).clone().requires_grad_(true);
      const auto ref = F::cross_entropy(ref_logits, targets, F::CrossEntropyFuncOptions().ignore_index(-100));
      ref.backward(upstream);
      const std::string what = std::string(c10::toString(dtype)) + " block " + std::to_string(block);
      EXPECT_EQ(ours.scalar_type(), torch::kFloat32) << what;
      EXPECT_NEAR(ours.item<double>(), ref.item<double>(), 1e-5 * std::abs(ref.item<double>())) << what;
      ASSERT_EQ(logits.grad().scalar_type(), dtype) << what;
      const auto ours_grad = logits.grad().to(torch::kFloat64), ref_grad = ref_logits.grad().to(torch::kFloat64);
      const double tolerance = dtype == torch::kFloat32 ? 1e-6 : 1e-2;  // 16-bit: one rounding of each element
      EXPECT_LT(((ours_grad - ref_grad).norm() / ref_grad.norm()).item<double>(), tolerance) << what;
      EXPECT_EQ(ours_grad[2].abs().sum().item<double>(), 0.0) << "an ignored row got a gradient, " << what;
    }
  }
  // Nothing counted: NaN, as PyTorch's mean over no elements.
  EXPECT_TRUE(std::isnan(se::chunked_cross_entropy(base, torch::full({rows}, -100, torch::kLong)).item<double>()));
  EXPECT_THROW(se::chunked_cross_entropy(base, targets.narrow(0, 0, 5)), c10::Error);
}

TEST(Models, MlpLossIsMeanSquaredError) {
  torch::manual_seed(1);
  se::MlpModel mlp({4, {8}, 2});
  const se::Batch batch{torch::randn({5, 4}), torch::randn({5, 2})};
  const auto expected = (mlp.forward(batch.inputs) - batch.targets).pow(2).mean();
  EXPECT_NEAR(mlp.loss(batch).item<double>(), expected.item<double>(), 1e-7);
  EXPECT_EQ(mlp.layers().size(), 2u);
}
