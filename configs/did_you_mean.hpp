#pragma once
// "Did you mean" suggestions for misspelled config keys, CLI flags and subcommands.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::configs {

/// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), case-sensitive.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word` if it is close enough to be a plausible typo: distance at most
/// max(1, len/3) (so "gradient_clipp1ng" finds "gradient_clipping" but "fp32" finds nothing).
/// Ties go to the earlier candidate.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

}  // namespace shardscope::configs
