#include "configs/did_you_mean.hpp"

#include <algorithm>
#include <cctype>

#include "configs/ascii_case.hpp"

namespace shardscope::configs {
namespace {

std::size_t length_gap(const std::string& a, const std::string& b) {
  return a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Three rows of the optimal-string-alignment table (the transposition looks two rows back), so
  // memory is O(|b|) however long `a` is.
  const std::size_t m = b.size();
  std::vector<std::size_t> two_back(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], two_back[j - 2] + 1);
    }
    std::swap(two_back, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  const std::string word_lower = ascii_lowercase(word);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    // The distance is at least the length difference: a candidate too far apart in length cannot
    // win, and skipping it keeps a 1 MB key linear instead of 1 MB x |candidate| per candidate.
    if (length_gap(word, candidate) > limit) continue;
    // A case-only difference is the closest possible match short of equality.
    const std::size_t distance = ascii_lowercase(candidate) == word_lower ? 0 : edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace shardscope::configs
