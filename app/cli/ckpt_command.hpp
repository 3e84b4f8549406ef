#pragma once
// `shardscope ckpt`: the two actions and what they share (ckpt_command.cpp holds `info` and the
// dispatch, ckpt_consolidate.cpp `consolidate`). Both read checkpoints through the LibTorch-free
// checkpoints library only.

#include <cstdint>
#include <string>
#include <vector>

#include "app/cli/commands.hpp"

namespace shardscope::app {

/// The tags of DIR; a missing folder or one without any tag is bad input (UsageError), with the remedy.
std::vector<std::string> checkpoint_tags_of(const std::string& dir);
/// 1234567 -> "1,234,567".
std::string grouped(std::int64_t n);
std::string join_list(const std::vector<std::string>& items);

int ckpt_consolidate_action(const CommandArgs& args);

}  // namespace shardscope::app
