#pragma once
// --deepspeed-version, the same on every command that applies DeepSpeed's rules or reads what
// DeepSpeed writes (validate, estimate --config, watch, sessions import, ckpt, launch).

#include "app/cli/arg_parser.hpp"
#include "configs/deepspeed_version.hpp"

namespace shardscope::app {

/// Declares `--deepspeed-version V` with the supported versions and the default in its help.
void add_deepspeed_version_option(ArgParser& parser);

/// The rules chosen by the flag, else by the DeepSpeed installed in the active Python, else
/// 0.19.7; an unsupported version is a UsageError naming the supported ones.
configs::DeepSpeedRules deepspeed_rules_from(const ParsedArgs& parsed);

}  // namespace shardscope::app
