// The hjson-tolerant parser: locations, DeepSpeed's leniencies (as notes), duplicate keys and
// syntax errors with line, column and what was expected.
#include <gtest/gtest.h>

#include "configs/config_document.hpp"

namespace shardscope::configs {
namespace {

const Diagnostic* first(const ConfigDocument& doc, const std::string& code) {
  for (const auto& d : doc.parse_diagnostics)
    if (d.code == code) return &d;
  return nullptr;
}

TEST(ConfigParser, KeepsLineAndColumnOfEveryKeyAndValue) {
  const auto doc = parse_config_text("{\n  \"zero_optimization\": {\n    \"stage\": 3\n  },\n"
                                     "  \"fp16\": {\"enabled\": true}\n}", "a.json");
  ASSERT_TRUE(doc.root.has_value());
  EXPECT_TRUE(doc.parse_diagnostics.empty());
  const ConfigMember* zero = doc.root->find_member("zero_optimization");
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(zero->key_location.line, 2);
  EXPECT_EQ(zero->key_location.column, 3);
  const ConfigMember* stage = zero->value.find_member("stage");
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->key_location.line, 3);
  EXPECT_EQ(stage->key_location.column, 5);
  EXPECT_EQ(stage->value.location.column, 14);
  EXPECT_EQ(stage->value.kind, ConfigNode::Kind::kInteger);
  EXPECT_EQ(stage->value.int_value, 3);
  const ConfigNode* enabled = doc.root->find("fp16")->find("enabled");
  EXPECT_EQ(enabled->location.line, 5);
  EXPECT_EQ(enabled->location.column, 23);
  EXPECT_TRUE(enabled->bool_value);
}

TEST(ConfigParser, ReadsNumbersAsPythonWould) {
  const auto doc = parse_config_text(R"({"a": 5e8, "b": -12, "c": 0.5, "d": 1E-4, "e": 99999999999999999999})", "n");
  ASSERT_TRUE(doc.root);
  EXPECT_EQ(doc.root->find("a")->kind, ConfigNode::Kind::kNumber);  // 5e8 is a float in Python
  EXPECT_DOUBLE_EQ(doc.root->find("a")->number_value, 5e8);
  EXPECT_EQ(doc.root->find("b")->int_value, -12);
  EXPECT_DOUBLE_EQ(doc.root->find("c")->number_value, 0.5);
  EXPECT_DOUBLE_EQ(doc.root->find("d")->number_value, 1e-4);
  EXPECT_EQ(doc.root->find("e")->kind, ConfigNode::Kind::kNumber);  // beyond int64
}

TEST(ConfigParser, DecodesEscapesAndUnicode) {
  const auto doc = parse_config_text(R"({"p": "a\"b\\c\n\u00e9\ud83d\ude00"})", "u");
  ASSERT_TRUE(doc.root);
  EXPECT_EQ(doc.root->find("p")->string_value, "a\"b\\c\n\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(ConfigParser, AcceptsHjsonCommentsAndTrailingCommasAsNotes) {
  const auto doc = parse_config_text("{\n  // a comment\n  # another\n  /* block\n  */\n"
                                     "  \"a\": [1, 2,],\n  \"b\": 2,\n}\n", "c.json");
  ASSERT_TRUE(doc.root.has_value());
  for (const auto& d : doc.parse_diagnostics) EXPECT_EQ(d.severity, Severity::kNote) << d.message;
  const Diagnostic* comment = first(doc, "json-comment");
  ASSERT_NE(comment, nullptr);
  EXPECT_EQ(comment->location.line, 2);
  EXPECT_NE(comment->message.find("3 comment(s)"), std::string::npos);
  int trailing = 0;
  for (const auto& d : doc.parse_diagnostics) trailing += d.code == "trailing-comma";
  EXPECT_EQ(trailing, 2);
  EXPECT_EQ(doc.root->find("a")->items.size(), 2u);
}

TEST(ConfigParser, AcceptsNewlineSeparatedMembersAndUnquotedKeys) {
  const auto doc = parse_config_text("{\n  stage: 3\n  \"b\": 'x'\n}", "h.json");
  ASSERT_TRUE(doc.root.has_value());
  EXPECT_EQ(doc.root->find("stage")->int_value, 3);
  EXPECT_EQ(doc.root->find("b")->string_value, "x");
  EXPECT_NE(first(doc, "unquoted-key"), nullptr);
  EXPECT_NE(first(doc, "missing-comma"), nullptr);
  EXPECT_NE(first(doc, "single-quoted-string"), nullptr);
}

TEST(ConfigParser, DuplicateKeysAreErrorsNamingTheKeyAndBothLines) {
  const auto doc = parse_config_text("{\n  \"zero_optimization\": {\n    \"stage\": 2,\n"
                                     "    \"stage\": 3\n  }\n}", "d.json");
  ASSERT_TRUE(doc.root.has_value());
  const Diagnostic* dup = first(doc, "duplicate-key");
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ(dup->severity, Severity::kError);
  EXPECT_EQ(dup->location.line, 4);
  EXPECT_NE(dup->message.find("\"stage\""), std::string::npos);
  EXPECT_NE(dup->message.find("line 3"), std::string::npos);
  EXPECT_NE(dup->message.find("line 4"), std::string::npos);
  EXPECT_NE(dup->message.find("Duplicate keys in DeepSpeed config"), std::string::npos);
  // Like a Python dict, the later value wins.
  EXPECT_EQ(doc.root->find("zero_optimization")->find("stage")->int_value, 3);
  EXPECT_EQ(doc.root->find("zero_optimization")->members.size(), 1u);
}

TEST(ConfigParser, NoDuplicateErrorForTheSameKeyInDifferentObjects) {
  const auto doc = parse_config_text(R"({"fp16": {"enabled": true}, "bf16": {"enabled": false}})", "x");
  EXPECT_EQ(first(doc, "duplicate-key"), nullptr);
}

struct SyntaxCase {
  const char* text;
  int line;
  int column;
  const char* expected;  // a piece of the message
};

TEST(ConfigParser, ReadsQuotelessStringsToTheEndOfTheLineAsHjsonDoes) {
  // On one line the string swallows the closing brace, so hjson and this parser both fail.
  EXPECT_FALSE(parse_config_text("{\n  optimizer: {type: AdamW}\n  n: 2\n}", "q").root.has_value());
  // hjson.loads gives {"optimizer": {"type": "AdamW"}, "device": "cpu # offload", "n": 2}.
  const auto ok = parse_config_text("{\n  optimizer: {\n    type: AdamW\n  }\n  device: cpu # offload  \n  n: 2\n}", "q");
  ASSERT_TRUE(ok.root.has_value());
  EXPECT_EQ(ok.root->find("optimizer")->find("type")->string_value, "AdamW");
  EXPECT_EQ(ok.root->find("device")->string_value, "cpu # offload");
  EXPECT_EQ(ok.root->find("n")->int_value, 2);
  const Diagnostic* note = first(ok, "quoteless-string");
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->severity, Severity::kNote);
  EXPECT_EQ(note->location.line, 3);
}

TEST(ConfigParser, SyntaxErrorsGiveLineColumnAndWhatWasExpected) {
  const SyntaxCase cases[] = {
      {"{\n  \"a\": 1\n  \"b\" 2\n}", 3, 7, "expected ':' after the key \"b\""},
      {"{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}'"},
      {"{\n  \"a\": [1, 2\n", 3, 1, "expected ']' to close the array opened at 2:8"},
      {"{\"a\": \"abc}", 1, 7, "unterminated string"},
      {"{\"a\": tru}", 1, 11, "expected '}' to close the object"},  // hjson: the string "tru}"
      {"{\"a\": 01}", 1, 7, "leading zero"},
      {"{\"a\": 1.}", 1, 9, "digit after the decimal point"},
      {"{\"a\": }", 1, 7, "expected a value"},
      {"", 1, 1, "empty"},
      {"{} {}", 1, 4, "after the end of the config"},
      {"{\"a\": \"\\q\"}", 1, 8, "invalid escape"},
      {"{\"a\": 1 /* open", 1, 9, "unterminated /* comment"},
  };
  for (const auto& c : cases) {
    const auto doc = parse_config_text(c.text, "s.json");
    EXPECT_FALSE(doc.root.has_value()) << c.text;
    const Diagnostic* error = first(doc, "syntax-error");
    ASSERT_NE(error, nullptr) << c.text;
    EXPECT_EQ(error->severity, Severity::kError);
    EXPECT_EQ(error->location.line, c.line) << c.text << " -> " << error->message;
    EXPECT_EQ(error->location.column, c.column) << c.text << " -> " << error->message;
    EXPECT_NE(error->message.find(c.expected), std::string::npos) << error->message;
  }
}

TEST(ConfigParser, ColumnsCountCharactersNotUtf8Bytes) {
  const auto doc = parse_config_text("{\"\xC3\xA9\xC3\xA9\": 01}", "u.json");
  const Diagnostic* error = first(doc, "syntax-error");
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->location.column, 8);  // {"éé": 01  -> the 0 is the 8th character
}

TEST(ConfigParser, InvalidUtf8IsASyntaxErrorAtItsPlace) {
  const auto doc = parse_config_text("{\n  \"a\": \"x\xF7y\"\n}", "bad.json");
  ASSERT_FALSE(doc.root.has_value());
  const Diagnostic* error = first(doc, "syntax-error");
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->location.line, 2);
  EXPECT_EQ(error->location.column, 10);
  EXPECT_NE(error->message.find("not valid UTF-8 (byte 0xf7)"), std::string::npos);
}

TEST(ConfigParser, UnreadableFileThrowsNamingTheFile) {
  try {
    parse_config_file("/nonexistent/ds_config.json");
    FAIL() << "expected ConfigFileError";
  } catch (const ConfigFileError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/ds_config.json"), std::string::npos);
  }
  EXPECT_THROW(parse_config_file("/tmp"), ConfigFileError);
}

}  // namespace
}  // namespace shardscope::configs
