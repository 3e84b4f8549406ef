// --hf-trainer: the Trainer's "auto" fill and mismatch report (transformers 5.24.0), Python's
// printing of values, and the compile block against DeepSpeed 0.19.7's CompileConfig. The whole
// agreement with the real packages is tests/configs/hf_trainer_agreement.py (label deepspeed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "configs/hf_trainer_fill.hpp"
#include "configs/python_repr.hpp"
#include "tests/configs/config_test_util.hpp"

namespace shardscope::configs {
namespace {

using testing::check;

TEST(PythonRepr, FloatsPrintAsPythonsRepr) {
  EXPECT_EQ(python_float_repr(5e-05), "5e-05");
  EXPECT_EQ(python_float_repr(1e-08), "1e-08");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.001), "0.001");
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(200000000.0), "200000000.0");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(python_float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(python_str(nlohmann::json::array({0.9, 0.999})), "[0.9, 0.999]");
  EXPECT_EQ(python_str(nlohmann::json(true)), "True");
  EXPECT_EQ(python_str(nlohmann::json::array({"a", 1})), "['a', 1]");
}

ValidateOptions hf(const std::string& arguments, int world_size = 1) {
  ValidateOptions options;
  options.world_size = world_size;
  options.hf_trainer = parse_hf_trainer_arguments(arguments);
  return options;
}

TEST(HfTrainerFill, AutoValuesGetTheTrainingArguments) {
  const auto result = check(R"({
  "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                "warmup_num_steps": "auto", "total_num_steps": "auto"}},
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                        "stage3_param_persistence_threshold": "auto"}
})", hf("per_device_train_batch_size=4,gradient_accumulation_steps=2,learning_rate=3e-5,bf16=true,"
        "warmup_steps=0.1,max_steps=1000,hidden_size=1024", 8));
  ASSERT_TRUE(result.hf_trainer);
  std::map<std::string, nlohmann::json> filled;
  for (const auto& f : result.hf_trainer->filled) filled[f.path] = f.value;
  EXPECT_EQ(filled.at("train_batch_size"), 64);
  EXPECT_EQ(filled.at("optimizer.params.betas"), nlohmann::json::array({0.9, 0.999}));
  EXPECT_EQ(filled.at("scheduler.params.warmup_min_lr"), 0);
  EXPECT_EQ(filled.at("scheduler.params.warmup_num_steps"), 100);  // ceil(1000 * 0.1)
  EXPECT_EQ(filled.at("zero_optimization.reduce_bucket_size"), 1048576);
  EXPECT_EQ(filled.at("zero_optimization.stage3_prefetch_bucket_size"), 943718);  // int(0.9 * 1024 * 1024)
  EXPECT_EQ(filled.at("zero_optimization.stage3_param_persistence_threshold"), 10240);
  EXPECT_EQ(filled.at("bf16.enabled"), true);
  EXPECT_TRUE(result.hf_trainer->error.empty());
  EXPECT_FALSE(result.has_errors()) << testing::dump(result);
  EXPECT_EQ(testing::resolved_at(result, "train_batch_size")->source, ValueSource::kAutoFilled);
}

TEST(HfTrainerFill, MismatchesUseTransformersTextAtTheKeysLine) {
  const auto result = check("{\n  \"train_micro_batch_size_per_gpu\": 4,\n  \"gradient_clipping\": 1,\n"
                            "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 0.001, \"eps\": 1e-8}}\n}\n",
                            hf("per_device_train_batch_size=8"));
  ASSERT_TRUE(result.hf_trainer);
  ASSERT_EQ(result.hf_trainer->mismatches.size(), 2u);  // gradient_clipping 1 == max_grad_norm 1.0, eps 1e-8 == 1e-08
  EXPECT_EQ(result.hf_trainer->mismatches[0], "- ds train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=8");
  EXPECT_EQ(result.hf_trainer->mismatches[1], "- ds optimizer.params.lr=0.001 vs hf learning_rate=5e-05");
  EXPECT_EQ(result.hf_trainer->error,
            "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:\n"
            "- ds train_micro_batch_size_per_gpu=4 vs hf per_device_train_batch_size=8\n"
            "- ds optimizer.params.lr=0.001 vs hf learning_rate=5e-05\n"
            "The easiest method is to set these DeepSpeed config values to 'auto'.");
  const auto* first = testing::find_code_at(result, "hf-trainer-mismatch", "train_micro_batch_size_per_gpu");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->location.line, 2);
  EXPECT_EQ(testing::find_code_at(result, "hf-trainer-mismatch", "optimizer.params.lr")->location.line, 4);
}

TEST(HfTrainerFill, MissingHiddenSizeRaisesTransformersError) {
  const auto result = check(R"({"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})",
                            hf(""));
  ASSERT_TRUE(result.hf_trainer);
  EXPECT_EQ(result.hf_trainer->error,
            "The model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore it's not possible "
            "to automatically fill out the following `auto` entries in the DeepSpeed config file: "
            "['zero_optimization.reduce_bucket_size']. You can fix that by replacing `auto` values for these keys "
            "with an integer value of your choice.");
  EXPECT_TRUE(testing::has(result, "hf-trainer-hidden-size", Severity::kError));
}

TEST(HfTrainerFill, WithoutTheFlagAutoIsDeepSpeedsOwnError) {
  const auto result = check(R"({"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": 1.0})");
  EXPECT_FALSE(result.hf_trainer);
  EXPECT_TRUE(testing::has(result, "unfilled-auto", Severity::kError));
}

TEST(HfTrainerArguments, BadKeysAndValuesAreNamed) {
  EXPECT_THROW(parse_hf_trainer_arguments("learning_rat=1"), std::invalid_argument);
  try {
    parse_hf_trainer_arguments("learning_rat=1");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'learning_rate'?"), std::string::npos);
  }
  EXPECT_THROW(parse_hf_trainer_arguments("per_device_train_batch_size=0"), std::invalid_argument);
  EXPECT_THROW(parse_hf_trainer_arguments("bf16=maybe"), std::invalid_argument);
  EXPECT_EQ(parse_hf_trainer_arguments("").learning_rate, 5e-5);
}

TEST(CompileBlock, KeysOutsideDeepSpeedsCompileConfigAreErrors) {
  const auto bad = check(testing::clean_config(R"("compile": {"disable": false, "backend": "inductor"})"));
  EXPECT_TRUE(testing::find_code_at(bad, "unknown-key", "compile.disable")) << testing::dump(bad);
  EXPECT_TRUE(testing::find_code_at(bad, "unknown-key", "compile.backend"));
  EXPECT_TRUE(bad.has_errors());
  const auto good = check(testing::clean_config(R"("compile": {"deepcompile": true, "passes": ["z3"]})"));
  EXPECT_FALSE(good.has_errors()) << testing::dump(good);
  const auto pass = check(testing::clean_config(R"("compile": {"passes": ["z2"]})"));
  EXPECT_TRUE(testing::find_code_at(pass, "invalid-value", "compile.passes"));
}

}  // namespace
}  // namespace shardscope::configs
