#pragma once
// Splitting one line of user text into words as a POSIX shell (and Python's shlex.split, which
// DeepSpeed's launcher uses for --launcher_args) does: single quotes keep everything, double quotes
// keep everything but `\"` and `\\`, a backslash outside quotes escapes the next character.

#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::configs {

/// A line whose quote is not closed; what() says which quote ("double" or "single").
class UnclosedQuoteError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The words of `text`; throws UnclosedQuoteError for an unclosed quote.
std::vector<std::string> split_shell_words(const std::string& text);

}  // namespace shardscope::configs
