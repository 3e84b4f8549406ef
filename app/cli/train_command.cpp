// shardscope train: one rank of the embedded engine (see engine/training_run.hpp).
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "app/cli/train_args.hpp"
#include "configs/display_text.hpp"
#include "engine/data/data_error.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/model_spec.hpp"
#include "engine/training_run.hpp"

namespace shardscope::app {

int run_train_command(const CommandArgs& args) {
  const ArgParser parser = train_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  if (!p.value("config")) throw UsageError("train needs --config FILE (a DeepSpeed config)");
  if (!p.value("steps")) throw UsageError("train needs --steps N (optimizer steps to reach)");
  engine::TrainRunOptions o;
  o.config_path = *p.value("config");
  o.deepspeed_version = deepspeed_rules_from(p).version;
  for (const auto& text : p.values("set")) {
    try {
      o.overrides.push_back(configs::parse_override(text));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--set: ") + e.what());
    }
  }
  try {
    o.model = train_model_spec(p);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {  // an unknown --model, an unreadable --model-config
    throw UsageError(e.what());
  }
  o.weights_path = p.value("weights");
  o.data = p.value("data").value_or("synthetic");
  o.steps = positive_train_flag(p, "steps", 0);
  o.save_dir = p.value("save");
  o.save_every = positive_train_flag(p, "save-every", 0);
  o.save_format = p.value("save-format").value_or("safe");
  if (o.save_format != "safe" && o.save_format != "deepspeed")
    throw UsageError("--save-format '" + o.save_format + "' is not safe or deepspeed");
  o.load_dir = p.value("load");
  o.session_db = p.value("session");
  o.collector = p.value("collector");
  o.session_name = p.value("name").value_or("");
  o.device = p.value("device").value_or("auto");
  o.seed = static_cast<std::uint64_t>(positive_train_flag(p, "seed", 42));
  o.progress_bar = ::isatty(STDERR_FILENO) != 0;
  if (const auto window = p.value("profile-steps")) {
    const auto colon = window->find(':');
    try {
      std::size_t used = 0;
      o.profile_start = std::stoll(window->substr(0, colon), &used);
      if (used != (colon == std::string::npos ? window->size() : colon)) throw std::invalid_argument("trailing text");
      o.profile_steps = colon == std::string::npos ? 1 : std::stoll(window->substr(colon + 1), &used);
      if (colon != std::string::npos && used != window->size() - colon - 1) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw UsageError("--profile-steps '" + *window + "' is not START or START:COUNT, e.g. --profile-steps 10:3");
    }
    if (o.profile_start < 1 || o.profile_steps < 1)
      throw UsageError("--profile-steps: START and COUNT must be at least 1 (steps count from 1)");
  }
  o.command_line = {"shardscope", "train"};
  o.command_line.insert(o.command_line.end(), args.begin(), args.end());
  try {
    const auto result = engine::run_training(o, std::cout, std::cerr);
    std::cout << "trained " << result.steps_done << " step(s) to global step " << result.global_steps << " ("
              << result.skipped_steps << " skipped) in " << result.wall_seconds << " s";
    if (result.final_loss) std::cout << ", final loss " << *result.final_loss;
    std::cout << ", " << static_cast<long long>(result.tokens_per_second) << " tokens/s\n";
    // The same summary `shardscope sessions show` prints.
    if (o.session_db && !result.session_uid.empty())
      return run_sessions_command({"show", result.session_uid, "--db", *o.session_db});
  } catch (const engine::TrainConfigError& e) {
    std::cerr << configs::shown_text(e.what());
    return kExitFindings;
  } catch (const engine::DataError& e) {  // an unreadable or mismatched token file: a bad input (README: 2)
    std::cerr << "shardscope train: error: " << configs::shown_text(e.what()) << "\n";
    return kExitUsage;
  } catch (const engine::ModelError& e) {  // weights that do not fit the model, a model too large to build
    std::cerr << "shardscope train: error: " << configs::shown_text(e.what()) << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace shardscope::app
