// --deepspeed-version: one flag text and one way of choosing the default for every command.
#include "app/cli/deepspeed_version_flag.hpp"

#include <stdexcept>

namespace shardscope::app {

void add_deepspeed_version_option(ArgParser& parser) {
  parser.option("deepspeed-version", "V", "apply the rules of DeepSpeed V (" +
                configs::supported_deepspeed_versions_text() + "; default: the DeepSpeed installed in the "
                "active Python ($SHARDSCOPE_PYTHON, else python3), else 0.19.7)");
}

configs::DeepSpeedRules deepspeed_rules_from(const ParsedArgs& parsed) {
  try {
    return configs::choose_deepspeed_rules(parsed.value("deepspeed-version"));
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

}  // namespace shardscope::app
