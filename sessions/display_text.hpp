#pragma once
// Text from a session file shown to a person goes through the one escaping helper every front end
// uses for text from files (configs/display_text.hpp): a session file may be shared or written by
// another user, so its names, hosts, commands and log lines are untrusted.

#include "configs/display_text.hpp"

namespace shardscope::sessions {

using configs::escape_control_characters;
using configs::shown_text;
using configs::ShownTextOptions;

}  // namespace shardscope::sessions
