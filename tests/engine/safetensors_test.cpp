// Safetensors: the writer's format (checked byte by byte and by the estimator's header reader),
// round trips, and loading Hugging Face names into the built-in models with clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "engine/models/gpt2_model.hpp"
#include "engine/models/llama_model.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/safetensors_file.hpp"
#include "engine/models/weight_loader.hpp"
#include "tests/engine/temp_dir.hpp"

namespace se = shardscope::engine;
namespace est = shardscope::estimator;

namespace {

class Safetensors : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.file(name); }
  shardscope::test::TempDir dir_;
};

se::TransformerOptions tiny_gpt2() {
  se::TransformerOptions o;
  o.shape = est::default_shape(est::TransformerLayout::kGpt2);
  o.shape.layers = 2;
  o.shape.hidden = 32;
  o.shape.heads = 2;
  o.shape.vocab = 100;
  o.shape.max_positions = 16;
  return o;
}

std::shared_ptr<se::Gpt2Model> gpt2(std::uint64_t seed) {
  torch::manual_seed(seed);
  return std::make_shared<se::Gpt2Model>(tiny_gpt2());
}

se::NamedTensors state_of(torch::nn::Module& model, const std::string& strip = "") {
  se::NamedTensors tensors;
  for (const auto& p : model.named_parameters()) {
    std::string name = p.key();
    if (!strip.empty() && name.rfind(strip, 0) == 0) name = name.substr(strip.size());
    tensors.emplace_back(name, p.value().detach().clone());
  }
  return tensors;
}

void expect_same_parameters(torch::nn::Module& a, torch::nn::Module& b) {
  auto pb = b.named_parameters();
  for (const auto& p : a.named_parameters()) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const se::ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_F(Safetensors, WriterFollowsTheFormat) {
  const se::NamedTensors tensors = {{"a", torch::arange(6, torch::kFloat).view({2, 3})},
                                    {"b", torch::tensor({1.5, -2.0}).to(torch::kBFloat16)},
                                    {"c", torch::tensor({7}, torch::kLong)}};
  se::write_safetensors(path("t.safetensors"), tensors, {{"format", "pt"}});
  std::ifstream in(path("t.safetensors"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 24 + 4 + 8);
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("__metadata__":{"format":"pt"})"), std::string::npos);
  EXPECT_NE(header.find(R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"), std::string::npos);
  EXPECT_NE(header.find(R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]})"), std::string::npos);
  float third;
  std::memcpy(&third, bytes.data() + 8 + n + 8, 4);
  EXPECT_EQ(third, 2.0f);
  const auto parsed = est::read_safetensors_header(path("t.safetensors"));
  EXPECT_EQ(parsed.tensors.size(), 3u);
  const auto back = se::read_safetensors(path("t.safetensors"));
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].first, tensors[i].first);
    EXPECT_TRUE(torch::equal(back[i].second, tensors[i].second)) << tensors[i].first;
  }
  EXPECT_FALSE(dir_.exists("t.safetensors.tmp." + std::to_string(::getpid())));
  EXPECT_THROW(se::write_safetensors(path("d.safetensors"), {{"x", torch::ones(1)}, {"x", torch::ones(1)}}), se::ModelError);
}

TEST_F(Safetensors, RoundTripThroughWriterAndLoaderGivesIdenticalParameters) {
  auto source = gpt2(1), target = gpt2(2);
  se::write_safetensors(path("model.safetensors"), state_of(*source));
  const auto report = se::load_safetensors_weights(*target, path("model.safetensors"));
  EXPECT_EQ(report.loaded, source->parameters().size());
  EXPECT_TRUE(report.warnings.empty());
  expect_same_parameters(*source, *target);
}

TEST_F(Safetensors, BaseModelNamesShardsAndHalfPrecisionLoad) {
  auto source = gpt2(1), target = gpt2(2);
  auto state = state_of(*source, "transformer.");  // as GPT2Model (HF's gpt2 checkpoint) names them
  for (auto& [name, t] : state) t = t.to(torch::kBFloat16);
  const se::NamedTensors first(state.begin(), state.begin() + 5), second(state.begin() + 5, state.end());
  se::write_safetensors(path("model-00001-of-00002.safetensors"), first);
  se::write_safetensors(path("model-00002-of-00002.safetensors"), second);
  std::ofstream index(path("model.safetensors.index.json"));
  index << "{\"metadata\":{},\"weight_map\":{";
  for (std::size_t i = 0; i < state.size(); ++i)
    index << (i ? "," : "") << '"' << state[i].first << "\":\"model-0000" << (i < 5 ? 1 : 2) << "-of-00002.safetensors\"";
  index << "}}";
  index.close();
  const auto report = se::load_safetensors_weights(*target, path("model.safetensors.index.json"));
  EXPECT_EQ(report.files.size(), 2u);
  auto loaded = target->named_parameters();
  for (const auto& p : source->named_parameters())
    EXPECT_TRUE(torch::equal(loaded[p.key()], p.value().to(torch::kBFloat16).to(torch::kFloat))) << p.key();
}

TEST_F(Safetensors, MissingTensorIsNamedAndTheModelIsLeftUntouched) {
  auto source = gpt2(1), target = gpt2(2), untouched = gpt2(2);
  auto state = state_of(*source);
  state.erase(std::remove_if(state.begin(), state.end(),
                             [](const auto& t) { return t.first == "transformer.h.1.mlp.c_fc.bias"; }),
              state.end());
  se::write_safetensors(path("m.safetensors"), state);
  const auto message = error_of([&] { se::load_safetensors_weights(*target, path("m.safetensors")); });
  EXPECT_NE(message.find("transformer.h.1.mlp.c_fc.bias"), std::string::npos) << message;
  EXPECT_NE(message.find(path("m.safetensors")), std::string::npos) << message;
  expect_same_parameters(*target, *untouched);
}

TEST_F(Safetensors, MisShapedTensorNamesExpectedAndFoundShapes) {
  auto source = gpt2(1), target = gpt2(2);
  auto state = state_of(*source);
  for (auto& [name, t] : state)
    if (name == "transformer.h.0.attn.c_attn.weight") t = t.t().contiguous();  // nn.Linear's [out, in]
  se::write_safetensors(path("m.safetensors"), state);
  const auto message = error_of([&] { se::load_safetensors_weights(*target, path("m.safetensors")); });
  EXPECT_NE(message.find("transformer.h.0.attn.c_attn.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("[96, 32]"), std::string::npos) << message;
  EXPECT_NE(message.find("expects [32, 96]"), std::string::npos) << message;
}

TEST_F(Safetensors, UnsupportedDtypeFailsAndExtraTensorsWarn) {
  auto source = gpt2(1), target = gpt2(2);
  auto state = state_of(*source);
  state.emplace_back("transformer.h.0.attn.bias", torch::ones({1, 1, 16, 16}));  // HF's old causal-mask buffer
  se::write_safetensors(path("extra.safetensors"), state);
  const auto report = se::load_safetensors_weights(*target, path("extra.safetensors"));
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("transformer.h.0.attn.bias"), std::string::npos);

  state.pop_back();
  for (auto& [name, t] : state)
    if (name == "transformer.ln_f.weight") t = t.to(torch::kInt);
  se::write_safetensors(path("int.safetensors"), state);
  const auto message = error_of([&] { se::load_safetensors_weights(*target, path("int.safetensors")); });
  EXPECT_NE(message.find("transformer.ln_f.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("I32"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { se::load_safetensors_weights(*target, path("absent.safetensors")); }).find("absent.safetensors"),
            std::string::npos);
}

TEST_F(Safetensors, LlamaRoundTripWithUntiedHead) {
  se::TransformerOptions o;
  o.shape = est::default_shape(est::TransformerLayout::kLlama);
  o.shape.layers = 1;
  o.shape.hidden = 32;
  o.shape.heads = 4;
  o.shape.kv_heads = 2;
  o.shape.ffn = 48;
  o.shape.vocab = 64;
  torch::manual_seed(1);
  se::LlamaModel source(o);
  torch::manual_seed(2);
  se::LlamaModel target(o);
  auto state = state_of(source);
  state.emplace_back("model.rotary_emb.inv_freq", torch::ones({4}));
  se::write_safetensors(path("llama.safetensors"), state);
  const auto report = se::load_safetensors_weights(target, path("llama.safetensors"));
  EXPECT_EQ(report.warnings.size(), 1u);
  expect_same_parameters(source, target);
}
