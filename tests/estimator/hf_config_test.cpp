// Hugging Face config.json fixtures (one per family, copied from the public configs) against the
// parameter counts their model cards and `sum(p.numel() for p in model.parameters())` report.
#include <fstream>

#include <gtest/gtest.h>

#include "estimator/estimator_error.hpp"
#include "estimator/hf_config.hpp"

namespace shardscope::estimator {
namespace {

std::string fixture(const std::string& name) { return std::string(SHARDSCOPE_TEST_DATA_DIR) + "/hf/" + name; }

ModelDescription load(const std::string& name) { return describe_hf_config_file(fixture(name), HfConfigOptions{}); }

std::string error_of(const std::string& text) {
  try {
    describe_hf_config_text(text, "cfg.json", HfConfigOptions{});
  } catch (const EstimatorError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfConfig, PublishedParameterCounts) {
  struct Case {
    const char* file;
    double params;
  };
  const Case cases[] = {
      {"llama-2-7b.json", 6738415616.0},  {"llama-3-8b.json", 8030261248.0}, {"mistral-7b-v0.1.json", 7241732096.0},
      {"qwen2-7b.json", 7615616512.0},    {"qwen2-0.5b.json", 494032768.0},  {"gpt2.json", 124439808.0},
      {"gpt2-medium.json", 354823168.0},  {"pythia-160m.json", 162322944.0}, {"pythia-1b.json", 1011781632.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const ModelDescription d = load(c.file);
    EXPECT_EQ(d.total_params, c.params);
    EXPECT_EQ(d.source, ModelSource::kHfConfig);
    ASSERT_TRUE(d.shape.has_value());
  }
}

TEST(HfConfig, ModelTypeDecidesLayout) {
  EXPECT_EQ(load("llama-2-7b.json").shape->layout, TransformerLayout::kLlama);
  EXPECT_EQ(load("gpt2.json").shape->layout, TransformerLayout::kGpt2);
  EXPECT_EQ(load("pythia-160m.json").shape->layout, TransformerLayout::kGptNeox);
  const ModelDescription qwen = load("qwen2-7b.json");
  EXPECT_TRUE(qwen.shape->qkv_bias);
  EXPECT_FALSE(qwen.shape->attn_out_bias);
  EXPECT_EQ(qwen.shape->effective_kv_heads(), 4);
}

TEST(HfConfig, ShapeAndLargestLayer) {
  const ModelDescription d = load("mistral-7b-v0.1.json");
  EXPECT_EQ(d.shape->seq_len, 32768);
  EXPECT_EQ(d.shape->effective_ffn(), 14336);
  // The token embedding (32000 x 4096) beats one MLP projection (4096 x 14336 = 58.7M).
  EXPECT_EQ(d.largest_layer_params, 32000.0 * 4096);
  const ModelDescription gpt2 = load("gpt2.json");
  EXPECT_TRUE(gpt2.shape->tied_embeddings);
  EXPECT_TRUE(gpt2.shape->dropout);
  EXPECT_EQ(gpt2.breakdown->lm_head, 0);
  EXPECT_EQ(gpt2.breakdown->position_embedding, 1024.0 * 768);
}

TEST(HfConfig, SeqLenOverride) {
  HfConfigOptions options;
  options.seq_len = 2048;
  EXPECT_EQ(describe_hf_config_file(fixture("qwen2-7b.json"), options).shape->seq_len, 2048);
}

TEST(HfConfig, Qwen3AddsQkNorms) {
  const std::string base = R"({"model_type": "%s", "hidden_size": 1024, "num_hidden_layers": 2,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
    "vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": true})";
  auto with_type = [&](const std::string& type) {
    std::string text = base;
    text.replace(text.find("%s"), 2, type);
    return describe_hf_config_text(text, "cfg.json", HfConfigOptions{}).total_params;
  };
  // qwen3: q_norm and k_norm of head_dim each, per layer; no q/k/v biases (mistral has none either).
  EXPECT_EQ(with_type("qwen3") - with_type("mistral"), 2 * 2 * 128);
  // head_dim 128 x 16 heads = 2048 != hidden 1024: q_proj is 1024 x 2048.
  const double per_layer = 1024.0 * 2048 + 2 * 1024.0 * 1024 + 2048.0 * 1024 + 3 * 1024.0 * 3072 + 2 * 1024;
  EXPECT_EQ(with_type("mistral"), 1000.0 * 1024 + 2 * per_layer + 1024);
}

TEST(HfConfig, MissingKeyIsNamed) {
  const std::string message = error_of(R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 64, "vocab_size": 100})");
  EXPECT_NE(message.find("cfg.json"), std::string::npos) << message;
  EXPECT_NE(message.find("'hidden_size'"), std::string::npos) << message;
  EXPECT_NE(message.find("llama"), std::string::npos) << message;
  EXPECT_NE(error_of(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10})")
                .find("'n_ctx'"),
            std::string::npos);
}

TEST(HfConfig, BadValuesAndTypes) {
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": "4096"})").find("'hidden_size' must be a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 4096})").find("model_type"), std::string::npos);
  const std::string unknown = error_of(R"({"model_type": "lama"})");
  EXPECT_NE(unknown.find("did you mean 'llama'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("--hf-layout"), std::string::npos);
  const std::string syntax = error_of("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}");
  EXPECT_NE(syntax.find("cfg.json:3"), std::string::npos) << syntax;
  EXPECT_NE(error_of("[1, 2]").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": 100, "num_hidden_layers": 2, "num_attention_heads": 3,
      "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 16})")
                .find("not divisible"),
            std::string::npos);
}

TEST(HfConfig, LayoutOverrideReadsOtherModelTypes) {
  HfConfigOptions options;
  options.layout_override = TransformerLayout::kLlama;
  const std::string text = R"({"model_type": "yi", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 32})";
  const ModelDescription d = describe_hf_config_text(text, "cfg.json", options);
  EXPECT_EQ(d.total_params, 2 * 100.0 * 64 + 2 * (4 * 64.0 * 64 + 3 * 64.0 * 128 + 2 * 64) + 64);
  EXPECT_FALSE(d.notes.empty());
}

TEST(HfConfig, TextConfigOfMultimodalConfigs) {
  const std::string text = R"({"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10,
      "max_position_embeddings": 32}})";
  EXPECT_EQ(describe_hf_config_text(text, "cfg.json", HfConfigOptions{}).total_params,
            2 * 10.0 * 64 + (4 * 64.0 * 64 + 3 * 64.0 * 128 + 2 * 64) + 64);
}

TEST(HfConfig, MissingFile) {
  EXPECT_THROW(describe_hf_config_file(fixture("no-such.json"), HfConfigOptions{}), EstimatorError);
}

// Issue 22's campaign: numbers beyond a double, shapes beyond any model, files that are not files.
TEST(HfConfig, ANumberBeyondADoubleNamesTheFileLineAndKey) {
  EXPECT_EQ(error_of("{\"model_type\": \"llama\",\n  \"rope_theta\": 1e999}"),
            "cfg.json:2: the number 1e999 of key 'rope_theta' is beyond the range of a 64-bit float (about 1.8e308); "
            "write a finite value");
}

TEST(HfConfig, ShapesBeyondTheBoundsAreErrorsNamingTheKey) {
  EXPECT_EQ(error_of(R"({"model_type": "llama", "hidden_size": 4294967296, "num_hidden_layers": 2,
                         "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10})"),
            "cfg.json: key 'hidden_size' must be a positive integer up to 2147483647, got 4294967296");
  // Every key in bounds, but together far beyond any model: the count is refused, not printed
  // as -9223372036854775808M.
  const std::string huge = error_of(R"({"model_type": "llama", "hidden_size": 2147483647, "num_hidden_layers": 2147483647,
                         "num_attention_heads": 1, "intermediate_size": 2147483647, "vocab_size": 2147483647,
                         "max_position_embeddings": 4096})");
  EXPECT_NE(huge.find("cfg.json (llama): the model would have "), std::string::npos) << huge;
  EXPECT_NE(huge.find("parameters, above the 1e+15 the estimator accepts"), std::string::npos) << huge;
}

TEST(HfConfig, ADirectoryOrADeviceIsRefusedByType) {
  for (const char* path : {"/dev/zero", "/tmp"}) {
    try {
      describe_hf_config_file(path, HfConfigOptions{});
      FAIL() << path << " was read";
    } catch (const EstimatorError& e) {
      EXPECT_NE(std::string(e.what()).find("not a Hugging Face config.json"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace shardscope::estimator
