// shardscope validate: checks DeepSpeed configs as the chosen DeepSpeed release would read them.
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "configs/config_validator.hpp"
#include "configs/display_text.hpp"
#include "configs/hf_trainer_fill.hpp"
#include "configs/validation_report.hpp"

namespace shardscope::app {
namespace {

configs::ValidateOptions read_options(const ParsedArgs& parsed, const configs::DeepSpeedRules& rules) {
  configs::ValidateOptions options;
  options.deepspeed_version = rules.version;
  if (const auto world = parsed.integer("world-size")) {
    if (*world < 1 || *world > 1000000)
      throw UsageError("--world-size " + std::to_string(*world) +
                       ": expected a positive data-parallel world size");
    options.world_size = static_cast<int>(*world);
  }
  for (const auto& text : parsed.values("set")) {
    try {
      options.overrides.push_back(configs::parse_override(text));
    } catch (const std::invalid_argument& error) {
      throw UsageError(error.what());
    }
  }
  options.strict = parsed.has("strict");
  if (const auto hf = parsed.value("hf-trainer")) {
    try {
      options.hf_trainer = configs::parse_hf_trainer_arguments(*hf);
    } catch (const std::invalid_argument& error) {
      throw UsageError(error.what());
    }
  }
  return options;
}

// `--hf-trainer` takes an optional K=V list: alone (or before a flag or a file) it means the
// TrainingArguments defaults, so it is rewritten to `--hf-trainer=` for the parser.
CommandArgs with_hf_trainer_value(const CommandArgs& args) {
  CommandArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--hf-trainer") {
      out.push_back(args[i]);
      continue;
    }
    const bool next_is_list = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0 &&
                              args[i + 1].find('=') != std::string::npos && args[i + 1].find('/') == std::string::npos;
    out.push_back("--hf-trainer=" + (next_is_list ? args[++i] : std::string()));
  }
  return out;
}

}  // namespace

int run_validate_command(const CommandArgs& args) {
  ArgParser parser("validate",
                   "Checks DeepSpeed JSON configs as DeepSpeed (0.19.7 or 0.19.8) reads them (hjson:\n"
                   "comments and trailing commas allowed) and prints compiler-style diagnostics with a\n"
                   "hint each; the first line says whose rules applied.\n"
                   "Exit code 0 when no file has errors (warnings allowed), 1 when any has errors,\n"
                   "2 for bad flags or unreadable files.");
  parser.positional("FILE", "DeepSpeed config file(s) (ds_config.json)", 1, -1);
  parser.option("world-size", "N", "data-parallel world size for the batch keys (default: inferred)");
  parser.option("set", "KEY=VALUE", "fill an \"auto\" value or override a key, e.g. "
                "--set train_micro_batch_size_per_gpu=4 (repeatable)", true);
  parser.option("hf-trainer", "[K=V,...]", "fill \"auto\" as the Hugging Face Trainer does from these "
                "TrainingArguments (per_device_train_batch_size, gradient_accumulation_steps, learning_rate, "
                "weight_decay, adam_beta1, adam_beta2, adam_epsilon, max_grad_norm, fp16, bf16, warmup_steps, "
                "max_steps, hidden_size; the rest at transformers' defaults) and report its mismatches");
  add_deepspeed_version_option(parser);
  parser.flag("json", "print one JSON document (schema shardscope.validate/1)");
  parser.flag("resolved", "also print every effective value with its source");
  parser.flag("strict", "policy lints (explicit gradient_clipping, one precision mode) and notes "
              "for hjson-only syntax");
  const ParsedArgs parsed = parser.parse(with_hf_trainer_value(args));
  if (parsed.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  const configs::DeepSpeedRules rules = deepspeed_rules_from(parsed);
  const configs::ValidateOptions options = read_options(parsed, rules);
  const bool json = parsed.has("json");
  const bool resolved = parsed.has("resolved");
  bool unreadable = false;
  bool errors = false;
  nlohmann::json files = nlohmann::json::array();
  if (!json) std::cout << "rules: " << rules.describe() << "\n";
  for (const auto& path : parsed.positionals) {
    configs::ConfigDocument document;
    try {
      document = configs::parse_config_file(path);
    } catch (const configs::ConfigFileError& error) {
      std::cerr << "shardscope validate: " << configs::shown_text(error.what()) << "\n";
      unreadable = true;
      continue;
    }
    const configs::ValidationResult result = configs::validate(document, options);
    errors = errors || result.has_errors();
    if (json) {
      files.push_back(configs::validation_to_json(path, result, resolved));
      continue;
    }
    std::cout << configs::format_diagnostics_text(path, result);
    if (resolved) std::cout << "\nresolved config of " << path << ":\n" << configs::format_resolved_text(result) << "\n";
    std::cout << configs::format_summary_line(path, result);
  }
  if (json)
    std::cout << nlohmann::json{{"schema", "shardscope.validate/1"},
                                {"deepspeed_version", configs::to_string(rules.version)},
                                {"deepspeed_rules", rules.describe()},
                                {"files", files}}.dump(2) << "\n";
  if (unreadable) return kExitUsage;
  return errors ? kExitFindings : kExitOk;
}

}  // namespace shardscope::app
