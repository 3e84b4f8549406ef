// DeepSpeedVersion: the flag's parsing, the default read from an installed DeepSpeed's dist-info,
// and the rules that differ between 0.19.7 and 0.19.8 (the corpus's verdicts, recorded in
// data/versions/verdicts.json and checked against the real DeepSpeeds by deepspeed_agreement.py).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config_test_util.hpp"
#include "configs/deepspeed_version.hpp"

namespace shardscope::configs {
namespace {

using testing::check;
using testing::clean_config;
using testing::dump;
using testing::find_code_at;

ValidateOptions with(DeepSpeedVersion version) {
  ValidateOptions options;
  options.deepspeed_version = version;
  options.world_size = 1;
  return options;
}

TEST(DeepSpeedVersion, ParsesTheSupportedReleasesOnly) {
  EXPECT_EQ(parse_deepspeed_version("0.19.7"), DeepSpeedVersion::k0_19_7);
  EXPECT_EQ(parse_deepspeed_version("0.19.8"), DeepSpeedVersion::k0_19_8);
  EXPECT_EQ(parse_deepspeed_version("0.19.6"), std::nullopt);
  EXPECT_EQ(parse_deepspeed_version("0.19.8+cu130"), std::nullopt);
  try {
    deepspeed_version_from_flag("0.20.0");
    FAIL() << "0.20.0 accepted";
  } catch (const std::invalid_argument& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("--deepspeed-version 0.20.0"), std::string::npos) << text;
    EXPECT_NE(text.find("0.19.7, 0.19.8"), std::string::npos) << text;
  }
}

// A fake venv: bin/python3 beside pyvenv.cfg, and a dist-info whose METADATA names the version.
struct FakeVenv {
  std::filesystem::path root;
  explicit FakeVenv(const std::string& version) {
    root = std::filesystem::temp_directory_path() / ("shardscope-venv-" + std::to_string(::getpid()) + version);
    std::filesystem::create_directories(root / "bin");
    std::ofstream(root / "pyvenv.cfg") << "home = /usr/bin\n";
    std::ofstream(root / "bin/python3") << "#!/bin/sh\nexit 3\n";  // must not be run
    std::filesystem::permissions(root / "bin/python3", std::filesystem::perms::owner_all);
    if (version.empty()) return;
    const auto dist = root / "lib/python3.11/site-packages" / ("deepspeed-" + version + ".dist-info");
    std::filesystem::create_directories(dist);
    std::ofstream(dist / "METADATA") << "Metadata-Version: 2.1\nName: deepspeed\nVersion: " << version << "\n";
  }
  ~FakeVenv() { std::filesystem::remove_all(root); }
};

struct EnvGuard {
  explicit EnvGuard(const std::string& python) { ::setenv("SHARDSCOPE_PYTHON", python.c_str(), 1); }
  ~EnvGuard() { ::unsetenv("SHARDSCOPE_PYTHON"); }
};

TEST(DeepSpeedVersion, TheDefaultIsTheInstalledDeepSpeedsDistInfo) {
  FakeVenv venv("0.19.8");
  EnvGuard env((venv.root / "bin/python3").string());
  const DeepSpeedRules rules = choose_deepspeed_rules(std::nullopt);
  EXPECT_EQ(rules.version, DeepSpeedVersion::k0_19_8) << rules.describe();
  EXPECT_NE(rules.describe().find("DeepSpeed 0.19.8 rules (the DeepSpeed 0.19.8 installed"), std::string::npos)
      << rules.describe();
  EXPECT_EQ(choose_deepspeed_rules(std::string("0.19.7")).version, DeepSpeedVersion::k0_19_7) << "the flag wins";
}

TEST(DeepSpeedVersion, PackageVersionsOfTheCommandsPython) {
  // What `watch` records: the versions in the Python that runs the command, found from the
  // command's "#!" line (deepspeed, torchrun, accelerate are scripts) and read from dist-info.
  FakeVenv venv("0.19.8");
  const auto site = venv.root / "lib/python3.11/site-packages";
  std::filesystem::create_directories(site / "transformers-5.24.0.dist-info");
  std::ofstream(site / "transformers-5.24.0.dist-info/METADATA") << "Name: transformers\nVersion: 5.24.0\n";
  const auto script = venv.root / "bin/deepspeed";
  std::ofstream(script) << "#!" << (venv.root / "bin/python3").string() << "\nimport sys\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const std::string python = python_of_program(script.string());
  EXPECT_EQ(python, (venv.root / "bin/python3").string());
  const auto versions = installed_package_versions(python, {"deepspeed", "transformers", "accelerate"});
  EXPECT_EQ(versions.at("deepspeed"), "0.19.8");
  EXPECT_EQ(versions.at("transformers"), "5.24.0");
  EXPECT_EQ(versions.count("accelerate"), 0u);  // not installed: left out
  std::ofstream(venv.root / "bin/tool") << "#!/bin/sh\necho\n";
  EXPECT_EQ(python_of_program((venv.root / "bin/tool").string()), "") << "a shell script is no Python";
}

TEST(DeepSpeedVersion, AnUnsupportedOrMissingDeepSpeedFallsBackTo0197AndSaysWhy) {
  FakeVenv newer("0.21.0");
  {
    EnvGuard env((newer.root / "bin/python3").string());
    const DeepSpeedRules rules = choose_deepspeed_rules(std::nullopt);
    EXPECT_EQ(rules.version, DeepSpeedVersion::k0_19_7);
    EXPECT_NE(rules.source.find("DeepSpeed 0.21.0, which ShardScope has no rules for"), std::string::npos)
        << rules.source;
  }
  FakeVenv none("");
  EnvGuard env((none.root / "bin/python3").string());
  const DeepSpeedRules rules = choose_deepspeed_rules(std::nullopt);
  EXPECT_EQ(rules.version, DeepSpeedVersion::k0_19_7);
  EXPECT_NE(rules.source.find("has no DeepSpeed installed"), std::string::npos) << rules.source;
}

TEST(DeepSpeedVersion, TheCorpusVerdictsAreDeepSpeedsOwn) {
  const std::string dir = std::string(SHARDSCOPE_TEST_DATA_DIR) + "/versions/";
  const auto verdicts = nlohmann::json::parse(std::ifstream(dir + "verdicts.json"));
  ASSERT_GE(verdicts.size(), 25u);
  for (const auto& [name, by_version] : verdicts.items())
    for (const auto version : {DeepSpeedVersion::k0_19_7, DeepSpeedVersion::k0_19_8}) {
      const auto result = validate(parse_config_file(dir + name), with(version));
      const bool expect_error = by_version.at(to_string(version)) == "error";
      EXPECT_EQ(result.has_errors(), expect_error) << name << " under " << to_string(version) << ":\n" << dump(result);
    }
}

TEST(DeepSpeedVersion, RemovedKeysFollow0198sListInItsOrderAndWords) {
  const std::string text = clean_config(R"("progressive_layer_drop": {"enabled": false}, "amp": {"enabled": false})");
  const auto old = check(text, with(DeepSpeedVersion::k0_19_7));
  EXPECT_FALSE(old.has_errors()) << dump(old);
  EXPECT_NE(find_code_at(old, "deprecated-key", "amp"), nullptr) << "0.19.7 only warns";
  const auto next = check(text, with(DeepSpeedVersion::k0_19_8));
  const Diagnostic* amp = find_code_at(next, "removed-feature", "amp");
  const Diagnostic* pld = find_code_at(next, "removed-feature", "progressive_layer_drop");
  ASSERT_NE(amp, nullptr) << dump(next);
  ASSERT_NE(pld, nullptr) << dump(next);
  EXPECT_EQ(amp->message, "DeepSpeedConfigError: NVIDIA Apex AMP integration has been removed. Use DeepSpeed "
                          "'fp16', 'bf16', or 'torch_autocast' instead. See "
                          "https://github.com/deepspeedai/DeepSpeed/issues/8489.");
  // "amp" comes before "progressive_layer_drop" in DeepSpeed's dict, whatever the file's order.
  EXPECT_NE(pld->hint.find("DeepSpeed stops at the first removed key, \"amp\""), std::string::npos) << pld->hint;
}

TEST(DeepSpeedVersion, AutoReadDirectlyIsDeepSpeedsTypeError) {
  const auto direct = check(R"({"train_batch_size": 8, "gradient_accumulation_steps": "auto"})",
                            with(DeepSpeedVersion::k0_19_7));
  const Diagnostic* d = find_code_at(direct, "unfilled-auto", "gradient_accumulation_steps");
  ASSERT_NE(d, nullptr) << dump(direct);
  EXPECT_NE(d->message.find("TypeError: unsupported operand type(s) for //=: 'int' and 'str'"), std::string::npos)
      << d->message;
  EXPECT_NE(d->hint.find("--hf-trainer"), std::string::npos) << d->hint;
}

TEST(DeepSpeedVersion, ZeroBoundsAreThePydanticModels) {
  const auto zero_bucket = check(clean_config(R"("zero_optimization": {"stage": 2, "reduce_bucket_size": 0})"));
  const Diagnostic* d = find_code_at(zero_bucket, "out-of-range", "zero_optimization.reduce_bucket_size");
  ASSERT_NE(d, nullptr) << dump(zero_bucket);
  EXPECT_NE(d->message.find("Input should be greater than 0 "), std::string::npos) << d->message;
  EXPECT_FALSE(check(clean_config(R"("optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2, "allgather_bucket_size": 0})"))
                   .has_errors());
  EXPECT_FALSE(check(clean_config(R"("optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2, "zero_hpz_partition_size": 0})"))
                   .has_errors());
}

TEST(DeepSpeedVersion, OffloadParamBelowStage3IsAcceptedWithAWarning) {
  for (const auto version : {DeepSpeedVersion::k0_19_7, DeepSpeedVersion::k0_19_8}) {
    const auto result = check(clean_config(R"("zero_optimization": {"stage": 0, "offload_param": {"device": "cpu"}})"),
                              with(version));
    EXPECT_FALSE(result.has_errors()) << dump(result);
    EXPECT_NE(find_code_at(result, "offload-param-ignored", "zero_optimization.offload_param"), nullptr);
  }
}

TEST(DeepSpeedVersion, KeepInFp32ModulesIsChecked0198Only) {
  const std::string text = clean_config(R"("data_types": {"keep_in_fp32_modules": "norm"})");
  EXPECT_FALSE(check(text, with(DeepSpeedVersion::k0_19_7)).has_errors());
  const auto next = check(text, with(DeepSpeedVersion::k0_19_8));
  const Diagnostic* d = find_code_at(next, "wrong-type", "data_types.keep_in_fp32_modules");
  ASSERT_NE(d, nullptr) << dump(next);
  EXPECT_EQ(d->message, "DeepSpeedConfigError: data_types.keep_in_fp32_modules must be \"auto\" or a list of "
                        "name patterns, got 'norm'");
  EXPECT_FALSE(check(clean_config(R"("data_types": {"keep_in_fp32_modules": "auto"})"),
                     with(DeepSpeedVersion::k0_19_8)).has_errors());
}

// Both releases' engines wrap a DummyOptim in BF16_Optimizer for bf16 at stage 0 with no optimizer
// block, and the first step fails a bare assert; an optimizer block, ZeRO, or the Trainer's own
// optimizer (--hf-trainer) avoid it.
TEST(DeepSpeedVersion, Bf16WithoutOptimizerIsTheFirstStepsAssertion) {
  const std::string bf16 = clean_config(R"("bf16": {"enabled": true, "check_grad_overflow": true})");
  for (const auto version : {DeepSpeedVersion::k0_19_7, DeepSpeedVersion::k0_19_8}) {
    const auto result = check(bf16, with(version));
    const Diagnostic* d = find_code_at(result, "bf16-without-optimizer", "bf16.enabled");
    ASSERT_NE(d, nullptr) << dump(result);
    EXPECT_EQ(d->severity, Severity::kError);
    EXPECT_NE(d->message.find("assert len(self.bf16_groups) == len(self.optimizer.param_groups)"), std::string::npos)
        << d->message;
    const std::string line = version == DeepSpeedVersion::k0_19_7 ? "bf16_optimizer.py:423" : "bf16_optimizer.py:562";
    EXPECT_NE(d->message.find(line), std::string::npos) << d->message;
    EXPECT_NE(d->hint.find("optimizer= to deepspeed.initialize"), std::string::npos) << d->hint;
  }
  const auto with_optimizer = clean_config(R"("bf16": {"enabled": true}, "optimizer": {"type": "AdamW"})");
  EXPECT_EQ(find_code_at(check(with_optimizer, with(DeepSpeedVersion::k0_19_7)), "bf16-without-optimizer", "bf16.enabled"),
            nullptr);
  const auto stage3 = clean_config(R"("bf16": {"enabled": true}, "zero_optimization": {"stage": 3})");
  EXPECT_FALSE(check(stage3, with(DeepSpeedVersion::k0_19_8)).has_errors()) << "ZeRO-3 runs a DummyOptim";
  ValidateOptions trainer = with(DeepSpeedVersion::k0_19_7);
  trainer.hf_trainer = HfTrainerArguments{};
  trainer.hf_trainer->bf16 = true;
  EXPECT_EQ(find_code_at(check(bf16, trainer), "bf16-without-optimizer", "bf16.enabled"), nullptr)
      << "the Trainer passes its own optimizer";
  ValidateOptions own = with(DeepSpeedVersion::k0_19_8);
  own.own_optimizer = true;  // ShardScope's engine, the estimator, an imported run
  EXPECT_FALSE(check(bf16, own).has_errors()) << dump(check(bf16, own));
  EXPECT_FALSE(check(clean_config(R"("zero_optimization": {"stage": 2})"), own).has_errors());
}

TEST(DeepSpeedVersion, Zero1And2WithoutOptimizerAssertAtEngineInit) {
  for (const auto version : {DeepSpeedVersion::k0_19_7, DeepSpeedVersion::k0_19_8})
    for (const int stage : {1, 2}) {
      const auto result = check(clean_config(R"("zero_optimization": {"stage": )" + std::to_string(stage) + "}"),
                                with(version));
      const Diagnostic* d = find_code_at(result, "zero-requires-optimizer", "zero_optimization.stage");
      ASSERT_NE(d, nullptr) << dump(result);
      EXPECT_NE(d->message.find("zero stage " + std::to_string(stage) + " requires an optimizer"), std::string::npos)
          << d->message;
      EXPECT_NE(d->message.find(version == DeepSpeedVersion::k0_19_7 ? "engine.py:2664" : "engine.py:2659"),
                std::string::npos) << d->message;
    }
}

}  // namespace
}  // namespace shardscope::configs
