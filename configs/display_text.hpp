#pragma once
// Text from a file shown to a person. A config, a hostfile, a model's config.json, a log or a
// session file may come from someone else, so any text taken from one is untrusted: printed raw,
// an ANSI escape sequence in a key or a host name could clear or retitle the terminal, and a 1 MB
// line would bury the message it sits in. Every front end prints such text through shown_text()
// (or escape_control_characters() where it cuts lines itself, as a table cell does). It lives in
// the lowest library so that configs, the estimator, the launcher and sessions share one helper.

#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::configs {

/// Longest line shown whole; a longer one keeps its start and end and says its length.
inline constexpr std::size_t kMaxShownLineBytes = 600;

/// `text` with every control character (C0, DEL, C1) and every byte that is not valid UTF-8
/// written as a visible escape (\e[31m becomes "\x1b[31m", U+009B becomes "\u009b"); printable
/// text, including non-ASCII letters, is unchanged. `keep_newlines` leaves '\n' as it is (for
/// multi-line reports whose line structure is ours, not the file's).
std::string escape_control_characters(std::string_view text, bool keep_newlines = false);

/// How many bytes of `text` are not part of a valid UTF-8 sequence (a text file has few or none;
/// random or binary data has many).
std::size_t invalid_utf8_bytes(std::string_view text);

struct ShownTextOptions {
  bool keep_newlines = true;                    ///< '\n' ends a line (false: escaped as \x0a)
  std::size_t max_line_bytes = kMaxShownLineBytes;  ///< 0: no cut
};

/// `text` escaped as escape_control_characters() does, each line longer than max_line_bytes cut to
/// its first and last bytes around "... [N of M bytes of this line left out] ...".
std::string shown_text(std::string_view text, ShownTextOptions options = {});

}  // namespace shardscope::configs
