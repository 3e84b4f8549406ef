// Setting one value in a config's text: only the edited span changes; compact objects, number
// spellings and comments elsewhere survive byte for byte; new members follow the object's layout;
// removed members take their comma and line; and a parse error is refused with its line.
#include <gtest/gtest.h>

#include "configs/config_document.hpp"
#include "configs/config_text_edit.hpp"

namespace shardscope::configs {
namespace {

// A config written by hand: comments, a compact object, numbers spelt 3e-4 and 5e8, hjson's
// unquoted key and trailing comma.
const std::string kHandWritten =
    "{\n"
    "  // batch: 4 x 2 x world size\n"
    "  \"train_micro_batch_size_per_gpu\": 4,\n"
    "  \"gradient_accumulation_steps\": 2,\n"
    "  \"bf16\": {\"enabled\": true},\n"
    "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4, \"betas\": [0.9, 0.95]}},\n"
    "  zero_optimization: {\n"
    "    \"stage\": 2,  # sharded gradients\n"
    "    \"reduce_bucket_size\": 5e8,\n"
    "  },\n"
    "}\n";

/// Everything outside [begin, old_end) in `before` equals everything outside [begin, new_end) in `after`.
void expect_only_span_changed(const std::string& before, const std::string& after, const TextEdit& edit) {
  EXPECT_EQ(before.substr(0, edit.begin), after.substr(0, edit.begin));
  EXPECT_EQ(before.substr(edit.end), after.substr(edit.begin + edit.text.size()));
}

ConfigNode parsed(const std::string& text) {
  const ConfigDocument doc = parse_config_text(text, "edited");
  for (const auto& d : doc.parse_diagnostics) EXPECT_NE(d.severity, Severity::kError) << d.message << "\n" << text;
  return doc.root.value_or(ConfigNode{});
}

TEST(ConfigTextEdit, ParserRecordsByteSpansOfValuesAndKeys) {
  const std::string text = R"({"a": {"b": 3e-4}, "c": [1, 2]})";
  const ConfigNode root = parsed(text);
  const ConfigMember* a = root.find_member("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(text.substr(a->key_offset, 3), "\"a\"");
  EXPECT_EQ(text.substr(a->value.begin_offset, a->value.end_offset - a->value.begin_offset), R"({"b": 3e-4})");
  const ConfigNode* b = a->value.find("b");
  EXPECT_EQ(text.substr(b->begin_offset, b->end_offset - b->begin_offset), "3e-4");
  const ConfigNode* c = root.find("c");
  EXPECT_EQ(text.substr(c->begin_offset, c->end_offset - c->begin_offset), "[1, 2]");
  EXPECT_EQ(root.begin_offset, 0u);
  EXPECT_EQ(root.end_offset, text.size());
}

TEST(ConfigTextEdit, ReplacingAValueChangesOnlyItsSpan) {
  const TextEdit edit = plan_value_edit(kHandWritten, "zero_optimization.stage", "3");
  const std::string after = apply_text_edit(kHandWritten, edit);
  EXPECT_EQ(edit.text, "3");
  EXPECT_EQ(after.size(), kHandWritten.size());
  expect_only_span_changed(kHandWritten, after, edit);
  EXPECT_NE(after.find("\"stage\": 3,  # sharded gradients"), std::string::npos);
  EXPECT_NE(after.find("\"lr\": 3e-4"), std::string::npos);  // spelling kept elsewhere
  EXPECT_NE(after.find("// batch: 4 x 2 x world size"), std::string::npos);
  EXPECT_EQ(parsed(after).find("zero_optimization")->find("stage")->int_value, 3);
  // The new value is written as spelt.
  const std::string lr = set_config_value(kHandWritten, "optimizer.params.lr", "1e-5");
  EXPECT_NE(lr.find("{\"lr\": 1e-5, \"betas\": [0.9, 0.95]}"), std::string::npos);
}

TEST(ConfigTextEdit, AddsAMemberInTheObjectsOwnLayout) {
  // One member per line: a new line with the siblings' indentation, after the trailing comma.
  TextEdit edit = plan_value_edit(kHandWritten, "zero_optimization.overlap_comm", "true");
  std::string after = apply_text_edit(kHandWritten, edit);
  expect_only_span_changed(kHandWritten, after, edit);
  EXPECT_NE(after.find("    \"reduce_bucket_size\": 5e8,\n    \"overlap_comm\": true\n  },"), std::string::npos)
      << after;
  EXPECT_TRUE(parsed(after).find("zero_optimization")->find("overlap_comm")->bool_value);
  // An inline object stays inline.
  after = set_config_value(kHandWritten, "bf16.immediate_grad_update", "false");
  EXPECT_NE(after.find("\"bf16\": {\"enabled\": true, \"immediate_grad_update\": false},"), std::string::npos) << after;
  // Missing objects on the way are written inline, at the top level's indentation.
  edit = plan_value_edit(kHandWritten, "zero_optimization.offload_optimizer.device", "\"cpu\"");
  after = apply_text_edit(kHandWritten, edit);
  expect_only_span_changed(kHandWritten, after, edit);
  EXPECT_NE(after.find("    \"offload_optimizer\": {\"device\": \"cpu\"}\n"), std::string::npos) << after;
  after = set_config_value(kHandWritten, "wandb.enabled", "true");
  EXPECT_NE(after.find("  },\n  \"wandb\": {\"enabled\": true}\n}"), std::string::npos) << after;
}

TEST(ConfigTextEdit, ACommentAfterTheLastValueStaysOnItsLine) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": 2 // two\n}\n";
  const std::string after = set_config_value(text, "c", "3");
  EXPECT_EQ(after, "{\n  \"a\": 1,\n  \"b\": 2, // two\n  \"c\": 3\n}\n");
}

TEST(ConfigTextEdit, NoCommaJoinsAQuotelessString) {
  // hjson reads `device: cpu,` as the string "cpu,": the new member goes on its own line instead.
  const std::string text = "{\n  offload: {\n    device: cpu\n  }\n}\n";
  const std::string after = set_config_value(text, "offload.pin_memory", "true");
  EXPECT_EQ(after, "{\n  offload: {\n    device: cpu\n    \"pin_memory\": true\n  }\n}\n");
  EXPECT_EQ(parsed(after).find("offload")->find("device")->string_value, "cpu");
}

TEST(ConfigTextEdit, RemovingAMemberTakesItsCommaAndLine) {
  std::string after = set_config_value(kHandWritten, "gradient_accumulation_steps", std::nullopt);
  EXPECT_EQ(after.find("gradient_accumulation_steps"), std::string::npos);
  EXPECT_NE(after.find("\"train_micro_batch_size_per_gpu\": 4,\n  \"bf16\""), std::string::npos) << after;
  // The last member of an inline object: the comma before it goes.
  after = set_config_value(kHandWritten, "optimizer.params.betas", std::nullopt);
  EXPECT_NE(after.find("\"params\": {\"lr\": 3e-4}}"), std::string::npos) << after;
  // The first of an inline object: the comma after it and the space.
  after = set_config_value(kHandWritten, "optimizer.type", std::nullopt);
  EXPECT_NE(after.find("\"optimizer\": {\"params\":"), std::string::npos) << after;
  // The last of a multi-line object without a trailing comma.
  after = set_config_value("{\n  \"a\": 1,\n  \"b\": 2\n}\n", "b", std::nullopt);
  EXPECT_EQ(after, "{\n  \"a\": 1\n}\n");
  // Absent: nothing to do.
  EXPECT_TRUE(plan_value_edit(kHandWritten, "scheduler.type", std::nullopt).empty());
  EXPECT_TRUE(plan_value_edit(kHandWritten, "fp16.enabled", std::nullopt).empty());
}

TEST(ConfigTextEdit, EmptyObjectsAndBlankText) {
  EXPECT_EQ(set_config_value("{}", "a", "1"), "{\"a\": 1}");
  EXPECT_EQ(set_config_value("{\n}\n", "a", "1"), "{\n  \"a\": 1\n}\n");
  EXPECT_EQ(set_config_value("  \n", "zero_optimization.stage", "3"), "{\n  \"zero_optimization\": {\"stage\": 3}\n}\n");
}

TEST(ConfigTextEdit, RefusesWhatItCannotEditWithTheReason) {
  try {
    plan_value_edit("{\n  \"a\": 1,\n  \"b\": \n}", "a", "2");
    FAIL() << "a syntax error must be refused";
  } catch (const ConfigEditError& e) {
    EXPECT_NE(std::string(e.what()).find("4:1: expected a value"), std::string::npos) << e.what();
  }
  try {
    plan_value_edit(R"({"fp16": true})", "fp16.enabled", "true");
    FAIL() << "a key holding a boolean cannot take members";
  } catch (const ConfigEditError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16 (line 1) holds boolean true, not an object"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(plan_value_edit("{}", "a", "tru"), ConfigEditError);  // hjson would take it as a string
  EXPECT_THROW(plan_value_edit("{}", "a..b", "1"), ConfigEditError);
  EXPECT_THROW(plan_value_edit("[1]", "a", "1"), ConfigEditError);
}

}  // namespace
}  // namespace shardscope::configs
