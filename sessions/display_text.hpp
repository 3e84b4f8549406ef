#pragma once
// Text from a session file shown to a person. A session file may be shared or written by another
// user, so its names, hosts, commands and log lines are untrusted: printed raw, an ANSI escape
// sequence in a session name could rewrite the terminal. Every front end shows such text through
// escape_control_characters.

#include <string>
#include <string_view>

namespace shardscope::sessions {

/// `text` with every control character (C0, DEL, C1) and every byte that is not valid UTF-8
/// written as a visible escape (\e[31m becomes "\x1b[31m", U+009B becomes "\u009b"); printable
/// text, including non-ASCII letters, is unchanged. `keep_newlines` leaves '\n' as it is (for
/// multi-line reports whose line structure is ours, not the file's).
std::string escape_control_characters(std::string_view text, bool keep_newlines = false);

}  // namespace shardscope::sessions
