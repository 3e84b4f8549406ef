// Fuzz-style robustness: truncated configs, random bytes and bit flips must give diagnostics
// (or a tree), never a crash, a hang or an exception; validate() must cope with whatever parses.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"

namespace shardscope::configs {
namespace {

std::string read_template(const char* name) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/templates/" + name);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void expect_survives(const std::string& text) {
  ConfigDocument doc;
  ASSERT_NO_THROW(doc = parse_config_text(text, "fuzz.json"));
  const bool has_error = std::any_of(doc.parse_diagnostics.begin(), doc.parse_diagnostics.end(),
                                     [](const Diagnostic& d) { return d.code == "syntax-error"; });
  EXPECT_EQ(has_error, !doc.root.has_value());
  ValidationResult result;
  ValidateOptions options;
  options.strict = true;
  options.world_size = 4;
  ASSERT_NO_THROW(result = validate(doc, options));
  for (const auto& d : result.diagnostics) {
    EXPECT_FALSE(d.code.empty());
    EXPECT_FALSE(d.message.empty());
  }
}

TEST(ConfigParserFuzz, EveryTruncationOfARealConfigIsAnErrorNotACrash) {
  const std::string text = read_template("zero3_cpu_offload.json");
  ASSERT_GT(text.size(), 200u);
  std::size_t errors = 0;
  for (std::size_t length = 0; length < text.size(); ++length) {
    const std::string prefix = text.substr(0, length);
    expect_survives(prefix);
    errors += !parse_config_text(prefix, "t").root.has_value();
  }
  // Only the full text (and the text minus trailing whitespace) parse.
  EXPECT_GE(errors, text.size() - 2);
}

TEST(ConfigParserFuzz, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 300);
  for (int i = 0; i < 2000; ++i) {
    std::string text(static_cast<std::size_t>(length(rng)), '\0');
    for (auto& c : text) c = static_cast<char>(byte(rng));
    if (i % 2) text.insert(0, "{");
    expect_survives(text);
  }
}

TEST(ConfigParserFuzz, RandomJsonTokenSoupNeverCrashes) {
  const char* tokens[] = {"{", "}", "[", "]", ",", ":", "\"stage\"", "\"auto\"", "3", "-1", "5e8",
                          "true", "null", "\"zero_optimization\"", "\"fp16\"", "//c\n", "/*", "*/",
                          "\"optimizer\"", "\"type\"", "\"params\"", "\n", " ", "\"\\u12", "#"};
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(tokens) - 1);
  for (int i = 0; i < 3000; ++i) {
    std::string text = "{";
    const int count = static_cast<int>(rng() % 40);
    for (int j = 0; j < count; ++j) text += tokens[pick(rng)];
    expect_survives(text);
  }
}

TEST(ConfigParserFuzz, BitFlipsOfARealConfigNeverCrash) {
  const std::string text = read_template("zero2_bf16.json");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string mutated = text;
    for (int flips = 0; flips < 3; ++flips)
      mutated[rng() % mutated.size()] ^= static_cast<char>(1 << (rng() % 8));
    expect_survives(mutated);
  }
}

TEST(ConfigParserFuzz, DeepNestingIsRejectedWithoutExhaustingTheStack) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto doc = parse_config_text(deep, "deep.json");
  ASSERT_FALSE(doc.root.has_value());
  EXPECT_NE(doc.parse_diagnostics.back().message.find("nesting deeper"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::configs
